// JSON as text for files and stdout, and JSON read from text with an error that says where it fails. A string that is
// no UTF-8 (a path of a file system that allows any byte) is written with U+FFFD for each bad byte, where nlohmann's
// dump() would throw: a record is never lost to a name.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace poslab {

// j.dump(indent), each byte outside a valid UTF-8 sequence replaced by U+FFFD.
inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

// Why `text` is no JSON object, "" when it is one (then `out` holds it): where the parse stopped, in nlohmann's
// words without its exception's code ("not JSON (at line 3, column 1: syntax error …)"), text cut short said so
// ("cut short: the text ends before the JSON does (at line …)"), or the kind of value it is instead ("a JSON array,
// not an object").
inline std::string json_object_error(const std::string& text, nlohmann::json& out) {
  try {
    out = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    if (const size_t at = what.find("parse error "); at != std::string::npos) what = what.substr(at + 12);
    // nlohmann counts the end of the input as one character read past the text: stopped there, it was cut short.
    if (e.byte > text.size()) return "cut short: the text ends before the JSON does (" + what + ")";
    return "not JSON (" + what + ")";
  } catch (const nlohmann::json::exception& e) {
    return std::string("not JSON (") + e.what() + ")";
  }
  if (out.is_object()) return "";
  return std::string("a JSON ") +
         (out.is_array()     ? "array"
          : out.is_string()  ? "string"
          : out.is_null()    ? "null"
          : out.is_boolean() ? "boolean"
                             : "number") +
         ", not an object";
}

}  // namespace poslab
