// config.yaml, metrics.jsonl, snapshots/index.jsonl, snapshots/model_stepN.json and kernel_paths.json: the files the
// trainer writes as a run goes (run_files.h).
#include "run/run_files.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include "formats/npy.h"
#include "run/json_records.h"
#include "run/tensorboard_files.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_text.h"

namespace poslab {
namespace fs = std::filesystem;

std::string run_dir(const Config& cfg) { return (fs::path(cfg.run.out_dir) / cfg.run.name).string(); }

Config read_run_config(const RunFolder& run) {
  const std::string path = run.config();
  return config_from_yaml(read_file(path), path);
}

std::vector<MetricsRecord> read_metrics(const std::string& path) {
  const std::string hint =
      "each line of metrics.jsonl is a JSON record with an integer step (poslab train writes "
      "them): mend or delete that line";
  std::vector<MetricsRecord> out;
  for (const auto& [line, j] : json_lines(path, "a metrics record", hint)) {
    // The step and each number checked (an error names the file, line and key), then read as the trainer's are.
    integer_key(path, line, j, "step", hint);
    for (const char* key : {"loss", "train_loss", "val_loss", "lr", "tokens_per_s"})
      number_key(path, line, j, key, hint);
    const MetricsRecord r = metrics_record(j);
    out.push_back(r);
  }
  return out;
}

MetricsRecord metrics_record(const nlohmann::json& j) {
  auto number = [&](const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN; };
  MetricsRecord r;
  r.step = j.value("step", int64_t{0});
  r.loss = number("loss");
  r.train_loss = number("train_loss");
  r.val_loss = number("val_loss");
  r.lr = number("lr");
  r.tokens_per_s = number("tokens_per_s");
  r.eval = j.contains("val_loss");
  return r;
}

std::vector<MetricsRecord> val_evals(const std::vector<MetricsRecord>& records) {
  std::vector<MetricsRecord> out;
  std::copy_if(records.begin(), records.end(), std::back_inserter(out), [](const auto& r) { return r.eval; });
  return out;
}

std::vector<SnapshotRecord> read_snapshot_index(const RunFolder& run) {
  const std::string path = run.snapshot_index();
  if (!is_file(path)) {
    // Tables there without their index: the index was lost, not the run's snapshots.
    int64_t tables = 0;
    std::error_code ec;
    for (fs::directory_iterator it(run.snapshots(), ec), end; !ec && it != end; it.increment(ec))
      tables += snapshot_step_of(it->path().filename().string()).has_value();
    if (tables > 0)
      throw Error(run.dir() + ": " + path + " is missing, but snapshots/ holds " + std::to_string(tables) + " tables",
                  "put the run's index.jsonl back (a line a snapshot: {\"step\": N, \"file\": "
                  "\"wpe_stepNNNNNN.npy\"})");
    // A run's config there: a run stopped before its first snapshot (or one whose table none is taken of).
    if (is_file(run.config()))
      throw Error(run.dir() + ": no snapshots (" + path + " is missing)",
                  "a run stopped before its first snapshot: poslab train --resume " + run.dir() +
                      " trains it on; a run with model.position none has no table to take");
    throw Error(run.dir() + ": no snapshots (" + path + " is missing)",
                "pass a run folder written by poslab train with model.position learned or sinusoidal");
  }
  const std::string hint =
      "each line of the snapshot index is JSON with an integer step and a file name (poslab train "
      "writes them): mend or delete that line";
  std::vector<SnapshotRecord> out;
  std::map<int64_t, size_t> line_of;  // a step twice is a line copied or mended by hand: the run writes each once
  for (const auto& [line, j] : json_lines(path, "a snapshot record", hint)) {
    SnapshotRecord r;
    r.step = integer_key(path, line, j, "step", hint);
    if (const auto [it, fresh] = line_of.emplace(r.step, line); !fresh)
      damaged(path, line, fmt::format("step {} again (first on line {})", r.step, it->second),
              "delete one of the two lines: the run writes one snapshot a step");
    if (!j.contains("file") || !j["file"].is_string()) damaged(path, line, "no snapshot file name (\"file\")", hint);
    r.file = j["file"].get<std::string>();
    if (r.file.empty() || r.file.find('/') != std::string::npos || r.file == "..")
      damaged(path, line, "\"" + r.file + "\" is not a file name inside snapshots/", hint);
    // A table the trainer wrote is named by its step: another step's name is a line mended by hand, which would
    // show that step's table as this one's.
    if (const std::optional<int64_t> named = snapshot_step_of(r.file); named && *named != r.step)
      damaged(path, line, fmt::format("step {} names {}, the table of step {}", r.step, r.file, *named),
              fmt::format("the trainer writes step {}'s table to {}: mend the line's step or file, or delete it",
                          r.step, snapshot_file_name(r.step)));
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
      throw Error(fmt::format("{}: a head of {} without its kind and offset_profile (a list of numbers)", path, key),
                  hint);
    // a summary that does not exist (NaN) is written as null
    for (const char* field :
         {"mass_offset0", "mass_offset1", "offset50", "offset90", "uniform_offset50", "decay_length"})
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
  const std::string hint =
      "the trainer writes this file with each snapshot: delete it (the report then leaves the "
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
  write_file_atomic(run.kernel_paths(), json_text(nlohmann::json{{"paths", paths}, {"how", how}}) + "\n");
}

std::optional<std::string> read_kernel_record(const RunFolder& run) {
  const std::string path = run.kernel_paths();
  if (!is_file(path)) return std::nullopt;
  const std::string hint =
      "the trainer writes this file when a run starts: delete it (a resumed run then chooses "
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
  append_line(run.snapshot_index(), json_text(line));
}

namespace {

// The text of a JSONL log that keeps the records of steps before `first_dropped`; the rest and a last line cut short
// go. A damaged record elsewhere is an error (json_lines): a resume never goes on from a log it cannot read.
std::optional<FileCut> jsonl_cut_from(const std::string& path, int64_t first_dropped, const std::string& record) {
  if (!is_file(path)) return std::nullopt;
  const std::string hint =
      "the file is damaged: repair or delete the line named, then resume again (nothing was changed)";
  const std::string text = read_file(path);
  if (!text.empty() && text.back() != '\n') {  // a crash while a line was appended: json_lines leaves it out
    const std::string tail = text.substr(text.rfind('\n') + 1);
    if (nlohmann::json::parse(tail, nullptr, /*allow_exceptions=*/false).is_discarded())
      spdlog::warn("{}: its last line was cut short ({} bytes, a crash while it was written): left out", path,
                   tail.size());
  }
  std::string kept;
  for (const auto& [no, j] : json_lines(path, record, hint)) {
    if (j.contains("step") && j["step"].is_number_integer() && j["step"].get<int64_t>() >= first_dropped) continue;
    kept += json_text(j) + '\n';
  }
  return FileCut{path, kept};
}

// A run whose snapshot tables up to the checkpoint's step are on disk lists some of them in its index: a table is
// committed before its line, and a checkpoint after both. An index lost or emptied beside them would be written over
// by the resume with its own steps' lines alone, dropping the run's history from every reader. (A table the index
// does not list is no sign of that: a resume leaves the tables past its checkpoint, which a later run of other steps
// never lists; and an index line may be taken out by hand to read a run without a damaged table.)
void check_index_lists_the_tables(const RunFolder& run, int64_t step) {
  std::vector<std::string> tables;  // up to `step`, by step
  std::error_code ec;
  for (fs::directory_iterator it(run.snapshots(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (const std::optional<int64_t> named = snapshot_step_of(name); named && *named <= step) tables.push_back(name);
  }
  if (tables.empty()) return;
  std::sort(tables.begin(), tables.end());
  const bool indexed = is_file(run.snapshot_index());
  if (indexed)
    for (const SnapshotRecord& r : read_snapshot_index(run))
      if (r.step <= step) return;
  const std::string which = tables.front() + (tables.size() > 1 ? fmt::format(" and {} more", tables.size() - 1) : "");
  throw Error(
      fmt::format("{} {}, but snapshots/ holds {} tables up to the checkpoint's step {} ({}): resuming would "
                  "drop them from the run",
                  run.snapshot_index(), indexed ? "lists none of them" : "is missing", tables.size(), step, which),
      "put the run's index.jsonl back (a line a snapshot: {\"step\": N, \"file\": \"wpe_stepNNNNNN.npy\"}), "
      "or move the folder away and train the run again; nothing was changed");
}

// The tables the index lists up to the checkpoint's step are whole: one lost or damaged since (a failing disk, a
// hand's edit) would fail the run's report and analysis only after the resume had trained on.
void check_listed_tables(const RunFolder& run, int64_t step) {
  if (!is_file(run.snapshot_index())) return;
  for (const SnapshotRecord& r : read_snapshot_index(run)) {
    if (r.step > step) continue;
    try {
      npy_shape(r.path);
    } catch (const Error& e) {
      throw Error(fmt::format("{} (the table of step {} that {} lists)", e.what(), r.step, run.snapshot_index()),
                  "put the table back, or take its line out of snapshots/index.jsonl to go on without it; nothing "
                  "was changed");
    }
  }
}

}  // namespace

void truncate_logs_after(const RunFolder& run, int64_t step) {
  // A log or folder of the run of the wrong kind (a folder where metrics.jsonl goes, a file where snapshots/ goes)
  // is said before any log is cut, not when the resumed run first writes there.
  std::error_code ec;
  for (const std::string& log : {run.metrics(), run.snapshot_index()})
    if (fs::exists(log, ec) && !fs::is_regular_file(log, ec))
      throw Error(log + ": is a folder (or another thing that is no file) where the run's log goes",
                  "move it away; nothing was changed");
  for (const std::string& dir : run.written_folders())
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
      throw Error(dir + ": is a file where the run's folder goes", "move it away; nothing was changed");
  check_index_lists_the_tables(run, step);
  check_listed_tables(run, step);
  if (is_file(run.metrics())) read_metrics(run.metrics());  // each record as the report reads it
  // Every log is read, and found sound, before any is cut: a damaged one refuses the resume with all as they were.
  std::vector<FileCut> cuts = events_cut_after(run, step);
  for (auto cut : {jsonl_cut_from(run.metrics(), step, "a metrics record"),
                   jsonl_cut_from(run.snapshot_index(), step + 1, "a snapshot record")})
    if (cut) cuts.push_back(*cut);
  for (const FileCut& cut : cuts) write_file_atomic(cut.path, cut.kept);
}

}  // namespace poslab
