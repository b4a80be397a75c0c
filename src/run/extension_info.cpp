// X.extension.json, written beside each checkpoint of poslab extend (run_files.h).
#include "run/run_files.h"

#include <spdlog/fmt/fmt.h>

#include <filesystem>
#include <utility>

#include "run/json_records.h"
#include "util/error.h"

namespace poslab {
namespace fs = std::filesystem;

nlohmann::json to_json(const ExtensionInfo& e) {
  return {{"source", e.source},
          {"source_step", e.source_step},
          {"from", e.from},
          {"to", e.to},
          {"method", e.method},
          {"seed", e.seed},
          {"checkpoint", e.checkpoint},
          {"table", e.table},
          {"run_name", e.run_name},
          {"table_before", e.table_before},
          {"table_after", e.table_after}};
}

ExtensionInfo read_extension_info(const std::string& path) {
  const std::string hint = "the file is damaged: write it again with poslab extend --force";
  const nlohmann::json j = parse_json_file(path, hint);
  ExtensionInfo e;
  e.from = key_of<int64_t>(path, j, "from", hint);
  e.to = key_of<int64_t>(path, j, "to", hint);
  e.method = key_of<std::string>(path, j, "method", hint);
  e.checkpoint = key_of<std::string>(path, j, "checkpoint", hint);
  if (e.from <= 0 || e.to <= e.from)
    throw Error(
        fmt::format("{}: from {} to {}: an extension goes from a positive length to a longer one", path, e.from, e.to),
        hint);
  if (j.contains("source")) e.source = key_of<std::string>(path, j, "source", hint);
  if (j.contains("source_step")) e.source_step = key_of<int64_t>(path, j, "source_step", hint);
  if (j.contains("seed")) e.seed = key_of<uint64_t>(path, j, "seed", hint);
  if (j.contains("table")) e.table = key_of<std::string>(path, j, "table", hint);
  if (j.contains("run_name")) e.run_name = key_of<std::string>(path, j, "run_name", hint);
  for (auto [key, field] : {std::pair{"table_before", &e.table_before}, std::pair{"table_after", &e.table_after}})
    if (j.contains(key)) {
      if (!j[key].is_object()) throw Error(fmt::format("{}: \"{}\" is not an object of metrics", path, key), hint);
      *field = j[key];
    }
  return e;
}

std::vector<std::string> extension_infos_of(const RunFolder& run) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run.extend_dir(), ec)) {
    if (!entry.is_directory(ec)) continue;
    for (const auto& file : fs::directory_iterator(entry.path(), ec))
      if (file.is_regular_file(ec) && is_extension_info(file.path().string())) out.push_back(file.path().string());
  }
  return out;
}

}  // namespace poslab
