// The training run: config -> data -> model -> loop with eval, snapshots, checkpoints and logs.
#pragma once

#include <string>
#include <vector>

namespace poslab {

struct TrainRequest {
  std::string config_path;             // YAML file; empty = defaults
  std::vector<std::string> overrides;  // "section.key=value", applied last
  std::string resume_dir;              // non-empty: continue this RUN_DIR from checkpoints/latest.pt
  int64_t stop_at = -1;                // stop at this step with a checkpoint, as if interrupted (-1 = never)
};

struct TrainSummary {
  std::string run_dir;
  int64_t steps = 0;            // optimizer updates done in total
  bool finished = false;        // reached train.max_steps (false when stopped early by stop_at)
  double train_loss = 0.0;      // final estimates
  double val_loss = 0.0;
  double seconds = 0.0;         // wall time of this invocation
  double tokens_per_s = 0.0;    // training throughput (train steps only)
  std::string report_html;      // the report written at the end (run.report), or empty
  int interrupted_by = 0;       // SIGINT / SIGTERM that stopped the run early, 0 if none
  int64_t skipped_steps = 0;    // non-finite steps skipped
};

TrainSummary train(const TrainRequest& request);

}  // namespace poslab
