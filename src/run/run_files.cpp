#include "run/run_files.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "util/error.h"
#include "util/fs.h"

namespace poslab {
namespace fs = std::filesystem;
namespace {

bool is_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

// A damaged record: the file and line, what is wrong, and what to do.
[[noreturn]] void damaged(const std::string& path, int line, const std::string& what, const std::string& hint) {
  throw Error(fmt::format("{}:{}: {}", path, line, what), hint);
}

// The JSON objects of a JSON-lines file with their line numbers. A last line that does not parse was cut short by
// a crash and is left out; any other line that does not parse is an error.
std::vector<std::pair<int, nlohmann::json>> json_lines(const std::string& path, const std::string& record,
                                                       const std::string& hint) {
  std::vector<std::pair<int, nlohmann::json>> out;
  std::istringstream in(read_file(path));
  std::vector<std::pair<int, std::string>> lines;
  int no = 0;
  for (std::string line; std::getline(in, line);) {
    ++no;
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.emplace_back(no, line);
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    auto j = nlohmann::json::parse(lines[i].second, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      if (i + 1 == lines.size()) break;
      damaged(path, lines[i].first, "not " + record + " (not JSON)", hint);
    }
    if (!j.is_object()) damaged(path, lines[i].first, "not " + record + " (not a JSON object)", hint);
    out.emplace_back(lines[i].first, std::move(j));
  }
  return out;
}

int64_t integer_key(const std::string& path, int line, const nlohmann::json& j, const char* key, const std::string& hint) {
  if (!j.contains(key)) damaged(path, line, fmt::format("no \"{}\"", key), hint);
  if (!j[key].is_number_integer()) damaged(path, line, fmt::format("\"{}\" is {}, not an integer", key, j[key].dump()), hint);
  return j[key].get<int64_t>();
}

// An optional number; null (how JSON writes NaN) or absent is NaN.
double number_key(const std::string& path, int line, const nlohmann::json& j, const char* key, const std::string& hint) {
  if (!j.contains(key) || j[key].is_null()) return NAN;
  if (!j[key].is_number()) damaged(path, line, fmt::format("\"{}\" is {}, not a number", key, j[key].dump()), hint);
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

template <typename T>
T key_of(const std::string& path, const nlohmann::json& j, const char* key, const std::string& hint) {
  if (!j.is_object() || !j.contains(key)) throw Error(fmt::format("{}: no \"{}\"", path, key), hint);
  try {
    return j[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(fmt::format("{}: \"{}\" is {}: not the expected type", path, key, j[key].dump()), hint);
  }
}

}  // namespace

std::string run_dir(const Config& cfg) { return (fs::path(cfg.run.out_dir) / cfg.run.name).string(); }

Config read_run_config(const RunFolder& run) {
  const std::string path = run.config();
  return config_from_yaml(read_file(path), path);
}

std::vector<MetricsRecord> read_metrics(const std::string& path) {
  const std::string hint = "each line of metrics.jsonl is a JSON record with an integer step (poslab train writes "
                           "them): mend or delete that line";
  std::vector<MetricsRecord> out;
  for (const auto& [line, j] : json_lines(path, "a metrics record", hint)) {
    MetricsRecord r;
    r.step = integer_key(path, line, j, "step", hint);
    r.loss = number_key(path, line, j, "loss", hint);
    r.train_loss = number_key(path, line, j, "train_loss", hint);
    r.val_loss = number_key(path, line, j, "val_loss", hint);
    r.eval = j.contains("val_loss");
    out.push_back(r);
  }
  return out;
}

std::vector<MetricsRecord> val_evals(const std::vector<MetricsRecord>& records) {
  std::vector<MetricsRecord> out;
  std::copy_if(records.begin(), records.end(), std::back_inserter(out), [](const auto& r) { return r.eval; });
  return out;
}

std::vector<SnapshotRecord> read_snapshot_index(const RunFolder& run) {
  const std::string path = run.snapshot_index();
  if (!is_file(path))
    throw Error(run.dir() + ": no snapshots (" + path + " is missing)",
                "pass a run folder written by poslab train with model.position learned or sinusoidal");
  const std::string hint = "each line of the snapshot index is JSON with an integer step and a file name (poslab train "
                           "writes them): mend or delete that line";
  std::vector<SnapshotRecord> out;
  for (const auto& [line, j] : json_lines(path, "a snapshot record", hint)) {
    SnapshotRecord r;
    r.step = integer_key(path, line, j, "step", hint);
    if (!j.contains("file") || !j["file"].is_string()) damaged(path, line, "no snapshot file name (\"file\")", hint);
    r.file = j["file"].get<std::string>();
    if (r.file.empty() || r.file.find('/') != std::string::npos || r.file == "..")
      damaged(path, line, "\"" + r.file + "\" is not a file name inside snapshots/", hint);
    r.path = run.snapshot_file(r.file);
    r.train_loss = number_key(path, line, j, "train_loss", hint);
    r.val_loss = number_key(path, line, j, "val_loss", hint);
    out.push_back(std::move(r));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  return out;
}

namespace {

bool numbers(const nlohmann::json& a) {
  return a.is_array() && std::all_of(a.begin(), a.end(), [](const nlohmann::json& v) { return v.is_number(); });
}

// A kernels object of the usage file: {"heads": [{kind, offset_profile, and the summaries as numbers}, …]}.
void check_kernels(const nlohmann::json& j, const char* key, const std::string& path, const std::string& hint) {
  const auto& kernels = j.value(key, nlohmann::json());
  if (!kernels.is_object() || !kernels.contains("heads") || !kernels["heads"].is_array())
    throw Error(fmt::format("{}: no {}.heads list", path, key), hint);
  for (const auto& h : kernels["heads"]) {
    if (!h.is_object() || !h.contains("kind") || !h["kind"].is_string() || !h.contains("offset_profile") ||
        !numbers(h["offset_profile"]))
      throw Error(fmt::format("{}: a head of {} without its kind and offset_profile (a list of numbers)", path, key), hint);
    // a summary that does not exist (NaN) is written as null
    for (const char* field : {"mass_offset0", "mass_offset1", "offset50", "offset90", "uniform_offset50", "decay_length"})
      if (!h.contains(field) || !(h[field].is_number() || h[field].is_null()))
        throw Error(fmt::format("{}: a head of {} has no {} (a number or null)", path, key, field), hint);
    if (h.contains("mass_first") && !h["mass_first"].is_number() && !h["mass_first"].is_null())
      throw Error(fmt::format("{}: a head of {} has a mass_first that is not a number", path, key), hint);
  }
}

}  // namespace

std::optional<nlohmann::json> read_snapshot_usage(const RunFolder& run, int64_t step) {
  const std::string path = run.snapshot_usage(step);
  if (!is_file(path)) return std::nullopt;
  const std::string hint = "the trainer writes this file with each snapshot: delete it (the report then leaves the "
                           "kernels of this step out)";
  nlohmann::json j = parse_json_file(path, hint);
  if (!j.is_object()) throw Error(path + ": not a JSON object", hint);
  check_kernels(j, "attention_kernels", path, hint);
  if (j.contains("data_attention")) check_kernels(j, "data_attention", path, hint);
  const auto& g = j.value("position_token", nlohmann::json());
  if (!g.is_object() || !g.contains("k") || !g["k"].is_number_integer() || !g.contains("principal_angles_degrees") ||
      !numbers(g["principal_angles_degrees"]))
    throw Error(path + ": no position_token object with k and principal_angles_degrees", hint);
  for (const char* field : {"mean_token_variance_ratio", "mean_token_spectrum_quantile", "max_abs_cosine"})
    if (!g.contains(field) || !(g[field].is_number() || g[field].is_null()))
      throw Error(fmt::format("{}: position_token has no {}", path, field), hint);
  return j;
}

void write_kernel_record(const RunFolder& run, const std::string& paths, const std::string& how) {
  write_file_atomic(run.kernel_paths(), nlohmann::json{{"paths", paths}, {"how", how}}.dump() + "\n");
}

std::optional<std::string> read_kernel_record(const RunFolder& run) {
  const std::string path = run.kernel_paths();
  if (!is_file(path)) return std::nullopt;
  const std::string hint = "the trainer writes this file when a run starts: delete it (a resumed run then chooses "
                           "its kernel paths afresh, which may change its last bits)";
  const nlohmann::json j = parse_json_file(path, hint);
  if (!j.is_object() || !j.contains("paths") || !j["paths"].is_string())
    throw Error(path + ": no \"paths\" string", hint);
  return j["paths"].get<std::string>();
}

void append_snapshot_record(const RunFolder& run, const SnapshotRecord& r) {
  nlohmann::json line = {{"step", r.step}, {"file", r.file}};
  if (std::isfinite(r.train_loss)) line["train_loss"] = r.train_loss;
  if (std::isfinite(r.val_loss)) line["val_loss"] = r.val_loss;
  append_line(run.snapshot_index(), line.dump());
}

namespace {

// Keeps the records of steps before `first_dropped`; the rest and a last line cut short go. A damaged record
// elsewhere is an error (json_lines): a resume never goes on from a log it cannot read.
void truncate_jsonl_from(const std::string& path, int64_t first_dropped, const std::string& record) {
  if (!is_file(path)) return;
  const std::string hint = "the file is damaged: repair or delete the line named, then resume again";
  std::string kept;
  for (const auto& [no, j] : json_lines(path, record, hint)) {
    if (j.contains("step") && j["step"].is_number_integer() && j["step"].get<int64_t>() >= first_dropped) continue;
    kept += j.dump() + '\n';
  }
  write_file_atomic(path, kept);
}

}  // namespace

void truncate_logs_after(const RunFolder& run, int64_t step) {
  truncate_jsonl_from(run.metrics(), step, "a metrics record");
  truncate_jsonl_from(run.snapshot_index(), step + 1, "a snapshot record");
}

std::string position_loss_csv(const std::vector<double>& loss) {
  std::string csv = "position,loss\n";
  for (size_t i = 0; i < loss.size(); ++i) csv += fmt::format("{},{:.6f}\n", i, loss[i]);
  return csv;
}

std::vector<double> read_position_loss(const std::string& path) {
  std::vector<double> loss;
  if (!is_file(path)) return loss;
  const std::string hint = "the file is damaged: write it again with poslab eval";
  std::istringstream in(read_file(path));
  std::string line;
  int no = 1;
  if (!std::getline(in, line) || line.rfind("position,loss", 0) != 0) damaged(path, 1, "the header is not position,loss", hint);
  while (std::getline(in, line)) {
    ++no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto comma = line.find(',');
    char* end = nullptr;
    const long long position = comma == std::string::npos ? -1 : std::strtoll(line.c_str(), &end, 10);
    if (comma == std::string::npos || end != line.c_str() + comma)
      damaged(path, no, "\"" + line + "\" is not POSITION,LOSS", hint);
    if (position != static_cast<long long>(loss.size()))
      damaged(path, no, fmt::format("position {} where {} was expected", position, loss.size()), hint);
    const char* value = line.c_str() + comma + 1;
    const double v = std::strtod(value, &end);
    if (end == value || std::string(end).find_first_not_of(" \t\r") != std::string::npos)
      damaged(path, no, fmt::format("loss \"{}\" is not a number", value), hint);
    loss.push_back(v);
  }
  return loss;
}

std::string shift_loss_csv(const std::vector<int64_t>& shifts, const std::vector<std::vector<double>>& by_position) {
  std::string csv = "shift,position,loss\n";
  for (size_t s = 0; s < shifts.size(); ++s)
    for (size_t i = 0; i < by_position[s].size(); ++i) csv += fmt::format("{},{},{:.6f}\n", shifts[s], i, by_position[s][i]);
  return csv;
}

ShiftCurve read_shift_loss(const std::string& path) {
  ShiftCurve c;
  if (!is_file(path)) return c;
  const std::string hint = "the file is damaged: write it again with poslab eval --shift";
  std::istringstream in(read_file(path));
  std::string line;
  int no = 1;
  if (!std::getline(in, line) || line.rfind("shift,position,loss", 0) != 0)
    damaged(path, 1, "the header is not shift,position,loss", hint);
  while (std::getline(in, line)) {
    ++no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    long long shift = 0, position = 0;
    double loss = 0;
    int used = 0;
    if (std::sscanf(line.c_str(), "%lld,%lld,%lf%n", &shift, &position, &loss, &used) != 3 ||
        line.find_first_not_of(" \t\r", static_cast<size_t>(used)) != std::string::npos)
      damaged(path, no, "\"" + line + "\" is not SHIFT,POSITION,LOSS", hint);
    if (position == 0) {
      c.shifts.push_back(shift);
      c.by_position.emplace_back();
    }
    if (c.shifts.empty() || c.shifts.back() != shift ||
        position != static_cast<long long>(c.by_position.back().size()))
      damaged(path, no, fmt::format("shift {} position {} out of order", shift, position), hint);
    c.by_position.back().push_back(loss);
  }
  for (const auto& v : c.by_position) {
    double sum = 0;
    for (double x : v) sum += x;
    c.loss.push_back(sum / static_cast<double>(v.size()));
  }
  return c;
}

nlohmann::json to_json(const ExtensionInfo& e) {
  return {{"source", e.source},         {"source_step", e.source_step}, {"from", e.from},
          {"to", e.to},                 {"method", e.method},           {"seed", e.seed},
          {"checkpoint", e.checkpoint}, {"table", e.table},             {"run_name", e.run_name},
          {"table_before", e.table_before}, {"table_after", e.table_after}};
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
    throw Error(fmt::format("{}: from {} to {}: an extension goes from a positive length to a longer one", path, e.from, e.to),
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

void write_sweep_index(const std::string& sweep_dir, const SweepIndex& s) {
  nlohmann::json j = {{"name", s.name}, {"file", s.file},   {"base", s.base},
                      {"sweep_yaml", s.sweep_yaml}, {"seeds", s.seeds}, {"set", s.set}};
  j["variants"] = nlohmann::json::array();
  for (const auto& v : s.variants) j["variants"].push_back({{"name", v.name}, {"set", v.set}});
  j["runs"] = nlohmann::json::array();
  for (const auto& r : s.runs) j["runs"].push_back({{"variant", r.variant}, {"seed", r.seed}, {"run_dir", r.run_dir}});
  write_file_atomic(sweep_index_path(sweep_dir), j.dump(2) + "\n");
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
