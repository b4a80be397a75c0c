// JSON as text for files and stdout. A string that is no UTF-8 (a path of a file system that allows any byte) is
// written with U+FFFD for each bad byte, where nlohmann's dump() would throw: a record is never lost to a name.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace poslab {

// j.dump(indent), each byte outside a valid UTF-8 sequence replaced by U+FFFD.
inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

}  // namespace poslab
