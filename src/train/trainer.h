// The training run: config -> data -> model -> loop with eval, snapshots, checkpoints and logs.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace poslab {

struct TrainRequest {
  std::string config_path;  // YAML file; empty = defaults
  std::string config_yaml;  // non-empty: the config as to_yaml wrote it, read in place of config_path's file (which
                            // names it in messages): a sweep's run as the sweep resolved it when it started
  std::vector<Override> overrides;  // "section.key=value" with its source (--set, a sweep file's), applied last
  std::string resume_dir;           // non-empty: continue this RUN_DIR from checkpoints/latest.pt
  std::string init_from;            // non-empty: a new run starting from this checkpoint's weights (train.init_from);
                                    // without a config file, the checkpoint's own config is the base
  int64_t stop_at = -1;             // stop at this step with a checkpoint, as if interrupted (-1 = never)
};

struct TrainSummary {
  std::string run_dir;
  int64_t steps = 0;        // optimizer updates done in total
  bool finished = false;    // reached train.max_steps (false when stopped early by stop_at)
  double train_loss = 0.0;  // the last eval's estimates
  double val_loss = 0.0;
  int64_t eval_step = -1;          // and its step: before `steps` in a run stopped between evals; -1: unknown
  double seconds = 0.0;            // wall time of this invocation
  double tokens_per_s = 0.0;       // training throughput (train steps only)
  bool report_due = false;         // rank 0 of a finished run with a position table and run.report: the caller writes
                                   // the report (report/report.h, write_report_of_finished_run)
  std::string report_html;         // the report's page, once the caller wrote it
  int interrupted_by = 0;          // SIGINT / SIGTERM that stopped the run early, 0 if none
  int64_t skipped_steps = 0;       // non-finite steps skipped
  int world_size = 1;              // processes that trained (data parallel)
  double train_seconds = 0.0;      // time in training steps (this process)
  double allreduce_seconds = 0.0;  // of which in collectives across processes
};

// Trains (or resumes) a run. Under a launcher (RANK, WORLD_SIZE, ... or SLURM's variables: see distributed/env.h) this
// process is one rank of a data-parallel run: rank 0 writes the run folder, every rank trains its share.
TrainSummary train(const TrainRequest& request);

// The config a train request would run with (the YAML + overrides, or the resumed run's own), validated.
struct Config;
Config train_config(const TrainRequest& request);

}  // namespace poslab
