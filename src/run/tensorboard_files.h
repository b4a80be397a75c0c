// A run in TensorBoard as it trains: RUN_DIR/tensorboard/ (run.tensorboard, on by default) holds the curves and the
// table's headline metrics as TensorBoard events (formats/tfevents.h), appended as the trainer writes metrics.jsonl and
// its snapshots, and every snapshot's table for the projector. `tensorboard --logdir runs` shows each run live.
// One event file per start of the trainer; a resume first cuts from the earlier files what it will write again, as
// it cuts metrics.jsonl, so that no step appears twice. `poslab export RUN_DIR --to tensorboard` writes the same
// for a run trained without them (export/export_tensorboard.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "run/run_files.h"
#include "run/run_folder.h"

namespace poslab {

struct TbScalar {
  int64_t step = 0;
  std::string tag;
  double value = 0.0;
};

// A metrics record's scalars as TensorBoard shows them: loss/batch, loss/train, loss/val, lr, tokens_per_s (the
// finite ones).
std::vector<TbScalar> metrics_scalars(const MetricsRecord& r);
// The tag of a table metric: "table/KEY".
std::string table_tag(const std::string& key);

// The event records of `scalars` (non-finite values left out), each stamped with `wall_time`.
std::string scalar_events(const std::vector<TbScalar>& scalars, double wall_time);

// The projector's files: a table as TSV (one row per line, values separated by tabs), the positions' labels
// (0 … rows-1) and the config naming one tensor per snapshot step ("wpe step S" in wpe_stepNNNNNN.tsv).
std::string projector_tsv(const float* data, int64_t rows, int64_t cols);
std::string projector_positions(int64_t rows);
std::string projector_config(const std::vector<int64_t>& steps);
std::string projector_table_file(int64_t step);  // "wpe_step000500.tsv"

// The event files of a TensorBoard folder in the order TensorBoard reads them (by name).
std::vector<std::string> event_files(const std::string& dir);

// On resume from the checkpoint at `step` (-1: a run started again from nothing): drops from every event file in
// RUN_DIR/tensorboard the scalars of `step` and later and the table metrics of later steps (the steps
// truncate_logs_after drops from metrics.jsonl and the snapshot index), and a last record cut short by a crash. Missing
// folder: nothing.
void truncate_events_after(const RunFolder& run, int64_t step);

// A file a resume cuts back, and the text it keeps.
struct FileCut {
  std::string path, kept;
};
// What truncate_events_after would write, without writing it: the event files it changes, each with what it keeps.
std::vector<FileCut> events_cut_after(const RunFolder& run, int64_t step);

// The trainer's writer: a new event file in RUN_DIR/tensorboard (events.out.tfevents.NNNN.poslab, NNNN one more than
// the last there) that starts with the file-version event, and the projector's config rewritten from the snapshot
// index (so that it lists the snapshots a resume kept). Call after truncate_logs_after.
class TensorboardLog {
 public:
  explicit TensorboardLog(const RunFolder& run);
  const std::string& events_path() const { return events_path_; }
  // Appends the scalars' events in one write (crash points as any append: util/fs.h).
  void add(const std::vector<TbScalar>& scalars);
  // A snapshot's table (rows, cols) of float32: its TSV, the positions' labels and the config, each written whole.
  void add_table(int64_t step, const float* data, int64_t rows, int64_t cols);

 private:
  void write_projector_config();
  RunFolder run_;
  std::string dir_, events_path_;
};

}  // namespace poslab
