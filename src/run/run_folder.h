// The layout of a run folder, in one place. Every other file asks this one for a path; none spells it.
//
//   RUN_DIR/config.yaml                         the run's full config (written at start)
//   RUN_DIR/metrics.jsonl                       one JSON record per logged step and per eval
//   RUN_DIR/lock                                held by the trainer writing the folder
//   RUN_DIR/checkpoints/latest.pt, best.pt
//   RUN_DIR/snapshots/index.jsonl               {step, file, train_loss, val_loss} per snapshot
//   RUN_DIR/snapshots/wpe_stepNNNNNN.npy, .json the table at a step, and its analysis
//   RUN_DIR/snapshots/attn_stepNNNNNN.npy       layer 0's position-only attention kernels, (n_head·P, P)
//   RUN_DIR/snapshots/model_stepNNNNNN.json     their summaries, and the position/token geometry
//   RUN_DIR/eval/per_position_loss_SPLIT.csv    poslab eval
//   RUN_DIR/eval/shift_loss_SPLIT.csv           poslab eval --shift
//   RUN_DIR/extend/N-METHOD/checkpoint.pt       poslab extend, with checkpoint.extension.json and checkpoint.wpe.npy
//   RUN_DIR/analysis/trajectory.csv, trajectory.json, verdict.json   poslab analyze RUN_DIR
//   RUN_DIR/analysis/NAME_report/               poslab report of one of the run's snapshots or checkpoints
//   RUN_DIR/export/hf/, export/tensorboard/     poslab export's default folders
//   RUN_DIR/report/index.html                   poslab report
//   RUN_DIR/tensorboard/                        TensorBoard's files, written as the run trains (run.tensorboard):
//                                               events.out.tfevents.NNNN.poslab (one per start of the trainer),
//                                               projector_config.pbtxt, positions.tsv, wpe_stepNNNNNN.tsv
// A sweep folder SWEEP_DIR holds sweep.json and one run folder per variant and seed: SWEEP_DIR/VARIANT/seed-S.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace poslab {

class RunFolder {
 public:
  explicit RunFolder(std::string dir);
  // The run folder of a checkpoint: RUN_DIR/checkpoints/X.pt -> RUN_DIR; a checkpoint elsewhere -> its folder.
  static RunFolder of_checkpoint(const std::string& checkpoint);

  const std::string& dir() const { return dir_; }
  std::string name() const;  // the folder's name
  std::string path()
      const;  // the folder as pages show it: absolute, without "." or ".." ("runs/x/snapshots/.." -> /…/runs/x)

  std::string config() const;
  std::string metrics() const;
  std::string lock() const;
  std::string kernel_paths() const;  // kernel_paths.json: the CPU kernel paths the run trains with
  std::string checkpoints() const;
  std::string latest_checkpoint() const;
  std::string best_checkpoint() const;
  std::string snapshots() const;
  std::string snapshot_index() const;
  std::string snapshot(int64_t step) const;                  // the .npy
  std::string snapshot_file(const std::string& file) const;  // a file named by the index, inside snapshots/
  std::string snapshot_kernels(int64_t step) const;          // attn_stepNNNNNN.npy: layer 0's position-only kernels
  std::string snapshot_usage(int64_t step) const;            // model_stepNNNNNN.json: how the model reads its table
  std::string eval_dir() const;
  std::string position_loss(const std::string& split = "val") const;
  std::string shift_loss(const std::string& split = "val") const;  // poslab eval --shift
  std::string extend_dir() const;
  std::string extension_checkpoint(int64_t to, const std::string& method) const;
  std::string analysis_dir() const;
  std::string trajectory_csv() const;
  std::string trajectory_json() const;
  std::string verdict_json() const;
  std::string report_dir() const;
  std::string tensorboard_dir() const;

  // Folders a killed writer may leave temporary files in (the run folder itself included).
  std::vector<std::string> written_folders() const;
  // Files whose presence means a run was started here (a second run must not share the folder).
  std::vector<std::string> files_of_a_started_run() const;
  // What a new run writes in its folder, each there only once a run started in it: config.yaml, kernel_paths.json,
  // metrics.jsonl and the folders checkpoints/, snapshots/, report/ and tensorboard/ (the lock aside).
  std::vector<std::string> entries_a_run_writes() const;
  // Those of them in the folder now (a folder among them when it holds anything).
  std::vector<std::string> entries_written() const;

  bool has_config_and_metrics() const;  // a run folder poslab train wrote
  bool has_snapshots() const;

 private:
  std::string at(const std::string& relative) const;
  std::string dir_;
};

// "wpe_step000500.npy"
std::string snapshot_file_name(int64_t step);
// The step a name of that form is for (500 for "wpe_step000500.npy"); nullopt for any other name.
std::optional<int64_t> snapshot_step_of(const std::string& file_name);
// The analysis JSON written beside a snapshot .npy (wpe_step000500.json).
std::string snapshot_analysis_path(const std::string& npy_path);
// Beside an extended checkpoint X.pt: X.extension.json (what was done) and X.wpe.npy (the extended table).
std::string extension_info_path(const std::string& checkpoint);
std::string extension_table_path(const std::string& checkpoint);
bool is_extension_info(const std::string& path);  // ends in .extension.json

// A sweep's folder: its index and the folder of one variant's seed.
std::string sweep_index_path(const std::string& sweep_dir);
std::string sweep_run_dir(const std::string& sweep_dir, const std::string& variant, int64_t seed);
std::string sweep_run_name(int64_t seed);                     // "seed-S"
std::string sweep_compare_dir(const std::string& sweep_dir);  // where poslab compare SWEEP_DIR writes
// The variant a run folder belongs to: its parent's name for a sweep's seed-S folder, else its own name.
std::string variant_of_run_dir(const std::string& run_dir);

}  // namespace poslab
