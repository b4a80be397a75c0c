// A count and its noun for messages: "1 file", "2 files", "0 files".
#pragma once

#include <cstdint>
#include <string>

namespace poslab {

// `n` and `noun`, its plural `nouns` (default: noun + "s") unless n is 1.
inline std::string counted(int64_t n, const std::string& noun, const std::string& nouns = "") {
  return std::to_string(n) + " " + (n == 1 ? noun : nouns.empty() ? noun + "s" : nouns);
}

}  // namespace poslab
