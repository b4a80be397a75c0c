// Position-table snapshots: the table as .npy in the run's snapshots/ folder, plus a record in its index.
#pragma once

#include <torch/torch.h>

#include <string>

namespace poslab {

// Writes W (block_size, n_embd) as float32 .npy, appends {step, file, train_loss[, val_loss]} to the snapshot index
// (NaN losses are left out), runs the analysis hook and returns its one-line summary.
std::string write_snapshot(const std::string& run_dir, int64_t step, const torch::Tensor& W, double train_loss,
                           double val_loss);

}  // namespace poslab
