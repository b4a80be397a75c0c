// Whole numbers as people write them: the rules every reader of one (the command line, a config, a sweep file) shares.
#pragma once

#include <string>

namespace poslab {

// "010", "+010", "-010": CLI11 and yaml-cpp read a whole number with a leading 0 as octal (010 is 8; 08 is no
// number), where a person means 10. The words that say so, or "" for any other text.
// "0x10" likewise: both read it as hexadecimal (16), which a person writing a config's number does not mean.
inline std::string leading_zero(const std::string& s) {
  const std::string digits = !s.empty() && (s[0] == '+' || s[0] == '-') ? s.substr(1) : s;
  if (digits.size() > 1 && digits[0] == '0' && digits.find_first_not_of("0123456789") == std::string::npos)
    return "write " + s + " without its leading 0 (a whole number with one reads as octal)";
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
    return "write " + s + " as a decimal number";
  return "";
}

}  // namespace poslab
