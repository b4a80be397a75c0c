// Small tests on strings that the standard library gives only from C++20.
#pragma once

#include <string>
#include <string_view>

namespace poslab {

// Whether `s` ends with `suffix` (any string ends with "").
inline bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace poslab
