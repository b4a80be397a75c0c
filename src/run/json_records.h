// The checks that the readers of a run folder's JSON files share (run_files.cpp, extension_info.cpp,
// sweep_index.cpp): each names the file (and, for JSON-lines files, the line) and says what to do. Internal to src/run.
#pragma once

#include <nlohmann/json.hpp>
#include <spdlog/fmt/fmt.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "util/error.h"
#include "util/json_text.h"

namespace poslab {

// What is at `path` (file_type::not_found where nothing is there); a path that cannot be looked at (a folder above it
// unreadable, a loop of links) is an error naming it, never taken for "missing".
std::filesystem::file_status looked_at(const std::string& path);
// A regular file is at `path` (looked_at's error too).
bool is_file(const std::string& path);

// A damaged record: the file and line, what is wrong, and what to do.
[[noreturn]] void damaged(const std::string& path, int line, const std::string& what, const std::string& hint);

// The JSON objects of a JSON-lines file with their line numbers. A last line that does not parse was cut short by
// a crash and is left out; any other line that does not parse is an error. `record` names a line in errors.
std::vector<std::pair<int, nlohmann::json>> json_lines(const std::string& path, const std::string& record,
                                                       const std::string& hint);

// A required integer of a JSON-lines record.
int64_t integer_key(const std::string& path, int line, const nlohmann::json& j, const char* key,
                    const std::string& hint);

// An optional number of a JSON-lines record; null (how JSON writes NaN) or absent is NaN.
double number_key(const std::string& path, int line, const nlohmann::json& j, const char* key, const std::string& hint);

// A whole JSON file.
nlohmann::json parse_json_file(const std::string& path, const std::string& hint);

// A required key of a JSON object, of type T. An integer T takes a JSON integer only: nlohmann's conversion of a
// fraction (or of 1e300) to an integer would round it silently (or overflow: undefined behaviour).
template <typename T>
T key_of(const std::string& path, const nlohmann::json& j, const char* key, const std::string& hint) {
  if (!j.is_object() || !j.contains(key)) throw Error(fmt::format("{}: no \"{}\"", path, key), hint);
  try {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      if (!j[key].is_number_integer())
        throw Error(fmt::format("{}: \"{}\" is {}: not the expected type", path, key, json_text(j[key])), hint);
    return j[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(fmt::format("{}: \"{}\" is {}: not the expected type", path, key, json_text(j[key])), hint);
  }
}

}  // namespace poslab
