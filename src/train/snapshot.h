// Snapshots during training: the position table as .npy in the run's snapshots/ folder with a record in its index
// and its analysis, and how the model reads it (layer 0's position-only attention kernels, the position/token
// geometry).
#pragma once

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <optional>
#include <string>

#include "analysis/analysis.h"
#include "analysis/attention_kernels.h"
#include "model/gpt.h"

namespace poslab {

// Real windows to measure the attention a model pays on text: `batches` batches of `batch_size` windows of
// block_size tokens drawn from `tokens` with `seed` (the same windows at every snapshot).
struct UsageWindows {
  const std::vector<int32_t>* tokens = nullptr;
  int batches = 4;
  int batch_size = 1;
  uint64_t seed = 0;
};

// Writes the model's table (block_size, n_embd) as float32 .npy, appends {step, file, train_loss[, val_loss]} to the
// snapshot index (NaN losses are left out), runs the analysis hook, writes the model's usage of the table
// (model_usage_json, with "data_attention" on `windows` when given and the tokens hold a window) and returns a
// one-line summary; `analysis`, when given, receives the table's analysis as soon as it is made. The model must have
// a position table. A file that cannot be written throws (the run stops, as at a checkpoint, and a resume writes the
// snapshot again); an analysis that fails is said in the summary and leaves its files out.
std::string write_snapshot(const std::string& run_dir, int64_t step, GPT& model, double train_loss, double val_loss,
                           const UsageWindows* windows = nullptr, std::optional<Analysis>* analysis = nullptr);

// Layer 0's weights as the attention-kernel analysis reads them, the mean token embedding added to each position.
AttentionWeights layer0_attention_weights(const GPT& model);

// Layer 0's attention as the model pays it on real windows (tokens and positions together), averaged over `batches`
// batches of `batch_size` windows of block_size tokens drawn with `seed`, summarised like the position-only kernels
// (mean_token_added is false: each window's own tokens are added).
AttentionKernels data_attention(GPT& model, const std::vector<int32_t>& tokens, int batches, int batch_size,
                                uint64_t seed);

// {"step", "attention_kernels", "position_token"} for a model with a table and at least one layer; `kernels`
// receives the (n_head, P, P) kernels when not null.
nlohmann::json model_usage_json(const GPT& model, int64_t step, AttentionKernels* kernels = nullptr);

}  // namespace poslab
