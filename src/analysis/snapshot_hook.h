// The one function the trainer calls at every position-table snapshot.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>

#include "analysis/analysis.h"

namespace poslab {

struct SnapshotInfo {
  int64_t step = 0;
  std::string npy_path;  // the snapshot just written; the analysis goes next to it as .json
};

// Runs the full analysis of W (block_size, n_embd), writes it next to the snapshot (wpe_stepNNNNNN.json)
// and returns a one-line summary for the log; `out`, when given, receives the analysis. An analysis that fails
// returns "analysis failed: WHY" and writes nothing; a file that cannot be written throws, as every file of a run.
std::string analyze_snapshot(const torch::Tensor& W, const SnapshotInfo& info, std::optional<Analysis>* out = nullptr);

}  // namespace poslab
