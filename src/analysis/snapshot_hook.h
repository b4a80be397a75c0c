// The one function the trainer calls at every position-table snapshot; the analysis module plugs in here.
#pragma once

#include <torch/torch.h>

#include <string>

namespace poslab {

struct SnapshotInfo {
  int64_t step = 0;
  std::string npy_path;  // the snapshot just written
};

// Analyses the table W (block_size, n_embd) and returns a one-line summary for the log.
// For now: mean row norm and mean cosine of adjacent rows.
std::string analyze_snapshot(const torch::Tensor& W, const SnapshotInfo& info);

}  // namespace poslab
