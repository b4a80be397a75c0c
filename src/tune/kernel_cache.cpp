#include "tune/kernel_cache.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <ctime>
#include <exception>
#include <filesystem>
#include <vector>

#include "data/dataset.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_text.h"
#include "util/kernel_paths.h"

namespace poslab {
namespace {

namespace fs = std::filesystem;

nlohmann::json timings_json(const std::vector<PathTiming>& timings) {
  nlohmann::json j = nlohmann::json::array();
  for (const PathTiming& t : timings) {
    nlohmann::json row = {{"paths", to_string(t.paths)}};
    if (t.unavailable.empty())
      row["ms"] = t.ms;
    else
      row["unavailable"] = t.unavailable;  // no time: JSON has no infinity
    if (t.rounds > 0) row["rounds"] = t.rounds;
    if (std::isfinite(t.vs_chosen)) row["vs_chosen"] = t.vs_chosen;
    if (std::isfinite(t.search_ms)) row["search_ms"] = t.search_ms;
    j.push_back(row);
  }
  return j;
}

}  // namespace

std::vector<PathTiming> timings_from_json(const nlohmann::json& rows, const std::string& what) {
  std::vector<PathTiming> timings;
  for (const auto& row : rows) {
    const std::string why = row.value("unavailable", std::string());
    timings.push_back({parse_kernel_paths(row.at("paths").get<std::string>(), kernel_paths(), what),
                       why.empty() ? row.at("ms").get<double>() : INFINITY, row.value("rounds", 0),
                       row.value("vs_chosen", double(NAN)), why, row.value("search_ms", double(NAN))});
  }
  return timings;
}

std::string kernel_cache_path(const Config& cfg) { return (fs::path(cache_dir(cfg)) / "kernel_paths.json").string(); }

std::optional<KernelTuning> read_kernel_cache(const std::string& path, const std::string& key) {
  if (!fs::is_regular_file(path)) return std::nullopt;
  try {
    const nlohmann::json j = nlohmann::json::parse(read_file(path));
    if (!j.is_object() || !j.contains(key)) return std::nullopt;
    const auto& e = j.at(key);
    KernelTuning t;
    t.key = key;
    t.chosen = parse_kernel_paths(e.at("paths").get<std::string>(), kernel_paths(), path);
    t.timings = timings_from_json(e.at("timings"), path);
    t.how = "cached on " + e.value("date", std::string("?")) + " in " + path;
    return t;
  } catch (const std::exception& e) {
    spdlog::warn("kernel paths: {} is damaged ({}); measuring again, and the file will be rewritten", path, e.what());
    return std::nullopt;
  }
}

void write_kernel_cache(const std::string& path, const KernelTuning& t) {
  nlohmann::json j = nlohmann::json::object();
  if (fs::is_regular_file(path)) {
    try {
      j = nlohmann::json::parse(read_file(path));
      if (!j.is_object()) j = nlohmann::json::object();
    } catch (const std::exception&) {
      j = nlohmann::json::object();  // damaged: read_kernel_cache warned; the rest of it is lost, as a cache may be
    }
  }
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  j[t.key] = {{"paths", to_string(t.chosen)}, {"timings", timings_json(t.timings)}, {"date", date}};
  try {
    make_dirs(fs::path(path).parent_path().string());
    write_file_atomic(path, json_text(j, 2) + "\n");
  } catch (const Error& e) {
    spdlog::warn("kernel paths: not cached ({}); the next run measures again", e.what());
  }
}

nlohmann::json to_json(const KernelTuning& t) {
  nlohmann::json j = {
      {"chosen", to_string(t.chosen)}, {"how", t.how}, {"key", t.key}, {"timings", timings_json(t.timings)}};
  if (!t.sdpa_kernel.empty()) j["sdpa_kernel"] = t.sdpa_kernel;
  return j;
}

}  // namespace poslab
