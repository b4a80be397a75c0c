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
// words without its exception's code ("at line 3, column 1: syntax error … unexpected end of input; …", "the text
// ends before the JSON does" for text cut short), or which JSON value it is instead ("an array, not an object").
inline std::string json_object_error(const std::string& text, nlohmann::json& out) {
  try {
    out = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    if (const size_t at = what.find("parse error "); at != std::string::npos) what = what.substr(at + 12);
    // Stopped at the text's end, and not for what follows a whole value ("…; expected end of input"): cut short.
    if (e.byte >= text.size() && what.find("; expected end of input") == std::string::npos)
      return "the text ends before the JSON does (cut short?): " + what;
    return "not JSON: " + what;
  } catch (const nlohmann::json::exception& e) {
    return std::string("not JSON: ") + e.what();
  }
  if (out.is_object()) return "";
  return std::string("JSON, but ") +
         (out.is_array()     ? "an array"
          : out.is_string()  ? "a string"
          : out.is_null()    ? "null"
          : out.is_boolean() ? "a boolean"
                             : "a number") +
         ", not an object";
}

}  // namespace poslab
