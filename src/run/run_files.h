// Typed readers and writers of the files in a run folder (run_folder.h lists them). Every reader names the file
// and, for line-based files, the line of the first damaged record, and says what to do. A last line cut short
// (a process killed while appending) is not damage: it is left out, as the trainer does on resume.
// Defined by group of formats: run_files.cpp (the trainer's files: config.yaml, metrics.jsonl, the snapshot index and
// usage, kernel_paths.json), eval_csv.cpp (the eval CSVs), extension_info.cpp and sweep_index.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "run/run_folder.h"

namespace poslab {

// RUN_DIR of a config: run.out_dir/run.name.
std::string run_dir(const Config& cfg);

// config.yaml, checked like any config (poslab::Error naming the file and the key).
Config read_run_config(const RunFolder& run);

// One record of metrics.jsonl: a logged step (loss, lr, speed) or an eval (train_loss, val_loss), or both.
struct MetricsRecord {
  int64_t step = 0;
  double loss = NAN;        // the batch loss at a logged step
  double train_loss = NAN;  // eval estimates
  double val_loss = NAN;    // NaN when the eval diverged
  double lr = NAN;          // the learning rate at a logged step
  double tokens_per_s = NAN;
  bool eval = false;  // an eval record (it has a val_loss, maybe null)
};
std::vector<MetricsRecord> read_metrics(const std::string& path);
// A record as the trainer makes it, before it is written (missing or null numbers are NaN).
MetricsRecord metrics_record(const nlohmann::json& j);
// The eval records, in file order (step order).
std::vector<MetricsRecord> val_evals(const std::vector<MetricsRecord>& records);

// One line of snapshots/index.jsonl.
struct SnapshotRecord {
  int64_t step = 0;
  std::string file;  // as written in the index: a name inside snapshots/
  std::string path;  // the file's path (RunFolder::snapshot_file)
  double train_loss = NAN;
  double val_loss = NAN;
};
// The index in step order. A missing index is an error that says which runs have snapshots.
std::vector<SnapshotRecord> read_snapshot_index(const RunFolder& run);
// Appends one record (NaN losses left out).
void append_snapshot_record(const RunFolder& run, const SnapshotRecord& record);

// snapshots/model_stepN.json: how the model read its table at that step ({step, attention_kernels, position_token};
// analysis/attention_kernels.h, position_token.h). nullopt when the run did not write it (no table, no layer).
std::optional<nlohmann::json> read_snapshot_usage(const RunFolder& run, int64_t step);

// On resume from the checkpoint at `step`: drops from metrics.jsonl the records of `step` and later (a step's
// checkpoint is written before its update, whose record the resumed run writes again) and from the snapshot index
// those of later steps (`step`'s own snapshot is on disk), so that no step is listed twice, and the same steps from
// the TensorBoard events (truncate_events_after). A last line cut short by a crash goes too; a damaged line elsewhere
// is an error naming the file and line. Missing files are fine.
void truncate_logs_after(const RunFolder& run, int64_t step);

// eval/per_position_loss_SPLIT.csv: "position,loss" then one row per position 0, 1, …
std::string position_loss_csv(const std::vector<double>& loss);
// kernel_paths.json: the kernel paths a run trains with ({"paths": "NAME=VALUE,…", "how": …}), so that a resumed
// run goes on with them. nullopt when the run has none (a run that trained on a GPU, or an older one).
void write_kernel_record(const RunFolder& run, const std::string& paths, const std::string& how);
std::optional<std::string> read_kernel_record(const RunFolder& run);

// The losses by position; empty when the file does not exist (the run was not evaluated).
std::vector<double> read_position_loss(const std::string& path);

// eval/shift_loss_SPLIT.csv: "shift,position,loss", one row per start row S and position of the window.
std::string shift_loss_csv(const std::vector<int64_t>& shifts, const std::vector<std::vector<double>>& by_position);
struct ShiftCurve {
  std::vector<int64_t> shifts;                   // in file order
  std::vector<std::vector<double>> by_position;  // per shift
  std::vector<double> loss;                      // per shift: the mean over positions
};
// Empty when the file does not exist.
ShiftCurve read_shift_loss(const std::string& path);

// X.extension.json beside an extended checkpoint: what poslab extend did, and the table's metrics before and after.
struct ExtensionInfo {
  std::string source;  // the checkpoint extended
  int64_t source_step = 0;
  int64_t from = 0, to = 0;
  std::string method;
  uint64_t seed = 0;
  std::string checkpoint;  // the extended checkpoint
  std::string table;       // its table (.npy)
  std::string run_name;
  nlohmann::json table_before = nlohmann::json::object(),
                 table_after = nlohmann::json::object();  // metric key -> value
};
nlohmann::json to_json(const ExtensionInfo& e);
ExtensionInfo read_extension_info(const std::string& path);
// Every RUN_DIR/extend/*/*.extension.json of a run (unsorted; none when there is no extend/ folder).
std::vector<std::string> extension_infos_of(const RunFolder& run);

// SWEEP_DIR/sweep.json: the sweep file's text, its variants and its runs (run_dir relative to SWEEP_DIR).
struct SweepIndex {
  struct Variant {
    std::string name;
    nlohmann::json set = nlohmann::json::object();
  };
  struct Run {
    std::string variant;
    int64_t seed = 0;
    std::string run_dir;
  };
  std::string name, file, base, sweep_yaml;
  std::vector<int64_t> seeds;
  std::vector<std::string> set;  // key=value given on the command line
  std::vector<Variant> variants;
  std::vector<Run> runs;
};
void write_sweep_index(const std::string& sweep_dir, const SweepIndex& index);
SweepIndex read_sweep_index(const std::string& sweep_dir);
bool is_sweep_dir(const std::string& dir);

}  // namespace poslab
