#include "run/json_records.h"

#include <cmath>
#include <filesystem>
#include <sstream>

#include "util/fs.h"
#include "util/json_text.h"

namespace poslab {

std::filesystem::file_status looked_at(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (st.type() == std::filesystem::file_type::not_found) return st;  // not there: no error
  if (ec)
    throw Error(path + ": cannot be looked at (" + ec.message() + ")",
                "check the permissions of the folders above it (ls -ld each) and any link on the way, then run the "
                "command again; nothing was changed");
  return st;
}

bool is_file(const std::string& path) { return std::filesystem::is_regular_file(looked_at(path)); }

void damaged(const std::string& path, int line, const std::string& what, const std::string& hint) {
  throw Error(fmt::format("{}:{}: {}", path, line, what), hint);
}

std::vector<std::pair<int, nlohmann::json>> json_lines(const std::string& path, const std::string& record,
                                                       const std::string& hint) {
  std::vector<std::pair<int, nlohmann::json>> out;
  const std::string text = read_file(path);
  // A line is appended with its newline in one write: a last line without one was cut short by a crash, and is left
  // out (a resume cuts it away); one with it, whole but no record, is damage like any other line.
  const bool torn = !text.empty() && text.back() != '\n';
  std::istringstream in(text);
  std::vector<std::pair<int, std::string>> lines;
  int no = 0;
  for (std::string line; std::getline(in, line);) {
    ++no;
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.emplace_back(no, line);
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    auto j = nlohmann::json::parse(lines[i].second, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      if (i + 1 == lines.size() && torn) break;
      damaged(path, lines[i].first, "not " + record + " (not JSON)", hint);
    }
    if (!j.is_object()) damaged(path, lines[i].first, "not " + record + " (not a JSON object)", hint);
    out.emplace_back(lines[i].first, std::move(j));
  }
  return out;
}

int64_t integer_key(const std::string& path, int line, const nlohmann::json& j, const char* key,
                    const std::string& hint) {
  if (!j.contains(key)) damaged(path, line, fmt::format("no \"{}\"", key), hint);
  if (!j[key].is_number_integer())
    damaged(path, line, fmt::format("\"{}\" is {}, not an integer", key, json_text(j[key])), hint);
  return j[key].get<int64_t>();
}

double number_key(const std::string& path, int line, const nlohmann::json& j, const char* key,
                  const std::string& hint) {
  if (!j.contains(key) || j[key].is_null()) return NAN;
  if (!j[key].is_number()) damaged(path, line, fmt::format("\"{}\" is {}, not a number", key, json_text(j[key])), hint);
  return j[key].get<double>();
}

nlohmann::json parse_json_file(const std::string& path, const std::string& hint) {
  const std::string text = read_file(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not JSON (" + e.what() + ")", hint);
  }
}

}  // namespace poslab
