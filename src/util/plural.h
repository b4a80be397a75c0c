// A count and its noun for messages: "1 file", "2 files", "0 files"; a count in groups of digits.
#pragma once

#include <cstdint>
#include <string>

namespace poslab {

// `n` and `noun`, its plural `nouns` (default: noun + "s") unless n is 1.
inline std::string counted(int64_t n, const std::string& noun, const std::string& nouns = "") {
  return std::to_string(n) + " " + (n == 1 ? noun : nouns.empty() ? noun + "s" : nouns);
}

// `n` with its digits in groups of three: "1,071,872" (a count to read at a glance).
inline std::string grouped(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

}  // namespace poslab
