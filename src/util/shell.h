// A path as one word of a shell command that poslab prints for the user to paste ("next: poslab eval PATH").
#pragma once

#include <string>

namespace poslab {

// `s` as it is when the shell reads it as one word unchanged (letters, digits and _ - . / : = , + @ %), else in
// single quotes, each ' written '\''.
inline std::string shell_word(const std::string& s) {
  const bool plain = !s.empty() && s.find_first_not_of(
                                       "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                       "0123456789_-./:=,+@%") == std::string::npos;
  if (plain) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace poslab
