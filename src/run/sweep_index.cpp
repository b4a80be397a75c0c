// SWEEP_DIR/sweep.json, written by poslab sweep and read by poslab compare (run_files.h).
#include "run/run_files.h"

#include <algorithm>
#include <filesystem>

#include "run/json_records.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_text.h"

namespace poslab {
namespace fs = std::filesystem;

void write_sweep_index(const std::string& sweep_dir, const SweepIndex& s) {
  nlohmann::json j = {{"name", s.name},   {"file", s.file}, {"base", s.base}, {"sweep_yaml", s.sweep_yaml},
                      {"seeds", s.seeds}, {"set", s.set}};
  j["variants"] = nlohmann::json::array();
  for (const auto& v : s.variants) j["variants"].push_back({{"name", v.name}, {"set", v.set}});
  j["runs"] = nlohmann::json::array();
  for (const auto& r : s.runs) j["runs"].push_back({{"variant", r.variant}, {"seed", r.seed}, {"run_dir", r.run_dir}});
  write_file_atomic(sweep_index_path(sweep_dir), json_text(j, 2) + "\n");
}

SweepIndex read_sweep_index(const std::string& sweep_dir) {
  const std::string path = sweep_index_path(sweep_dir);
  const std::string hint = "poslab sweep writes this file: run the sweep again (finished runs are kept)";
  const nlohmann::json j = parse_json_file(path, hint);
  SweepIndex s;
  s.name = key_of<std::string>(path, j, "name", hint);
  if (j.contains("file")) s.file = key_of<std::string>(path, j, "file", hint);
  if (j.contains("base")) s.base = key_of<std::string>(path, j, "base", hint);
  if (j.contains("sweep_yaml")) s.sweep_yaml = key_of<std::string>(path, j, "sweep_yaml", hint);
  if (j.contains("seeds")) s.seeds = key_of<std::vector<int64_t>>(path, j, "seeds", hint);
  if (j.contains("set")) s.set = key_of<std::vector<std::string>>(path, j, "set", hint);
  if (j.contains("variants")) {
    if (!j["variants"].is_array()) throw Error(path + ": \"variants\" is not a list", hint);
    for (const auto& v : j["variants"]) {
      SweepIndex::Variant x;
      x.name = key_of<std::string>(path + " (variants)", v, "name", hint);
      if (v.contains("set")) x.set = v["set"];
      s.variants.push_back(std::move(x));
    }
  }
  if (!j.contains("runs") || !j["runs"].is_array()) throw Error(path + ": no list of \"runs\"", hint);
  for (const auto& r : j["runs"]) {
    SweepIndex::Run x;
    x.variant = key_of<std::string>(path + " (runs)", r, "variant", hint);
    x.seed = key_of<int64_t>(path + " (runs)", r, "seed", hint);
    x.run_dir = key_of<std::string>(path + " (runs)", r, "run_dir", hint);
    const fs::path rel(x.run_dir);
    if (x.run_dir.empty() || rel.is_absolute() || std::find(rel.begin(), rel.end(), fs::path("..")) != rel.end())
      throw Error(path + ": run_dir \"" + x.run_dir + "\" is not a folder inside the sweep's folder", hint);
    s.runs.push_back(std::move(x));
  }
  return s;
}

bool is_sweep_dir(const std::string& dir) { return is_file(sweep_index_path(dir)); }

}  // namespace poslab
