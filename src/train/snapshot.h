// Position-table snapshots: RUN_DIR/snapshots/wpe_stepNNNNNN.npy plus a line in index.jsonl.
#pragma once

#include <torch/torch.h>

#include <string>

namespace poslab {

// "wpe_step000500.npy"
std::string snapshot_file_name(int64_t step);

// Writes W (block_size, n_embd) as float32 .npy, appends {step, file, train_loss[, val_loss]} to index.jsonl
// (NaN losses are left out), runs the analysis hook and returns its one-line summary.
std::string write_snapshot(const std::string& run_dir, int64_t step, const torch::Tensor& W, double train_loss,
                           double val_loss);

// Drops lines whose "step" is greater than `step` from a JSONL file (used on resume so that steps redone
// after the last checkpoint are not listed twice). A missing file is fine.
void truncate_jsonl_after(const std::string& path, int64_t step);

}  // namespace poslab
