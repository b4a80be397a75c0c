// Loss estimates on a token split, with their own seeded sampler so that training's RNG is untouched.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "distributed/comm.h"
#include "model/gpt.h"

namespace poslab {

class BatchSplit;  // model/batch_split.h

// The seed of the fixed eval windows of a split ("train" or "val"): training's evals and poslab eval agree.
inline uint64_t eval_seed(int64_t run_seed, const std::string& split) {
  return static_cast<uint64_t>(run_seed) + (split == "val" ? 2 : 1);
}

// Mean loss over `batches` random windows (same windows for the same seed), in eval mode without grad;
// the model's previous train/eval mode is restored. With a shard of a world of N, this rank scores its rows of
// every window batch and returns its part of the mean: the N ranks' parts add up to the whole mean.
// With a batch split (model/batch_split.h) on the CPU, each batch is scored through it: its slices in parallel threads,
// each by the whole-model forward where that can run.
double estimate_loss(GPT& model, const std::vector<int32_t>& tokens, int batches, int batch_size, uint64_t seed,
                     bool bf16, const torch::Device& device, const Shard& shard = {}, BatchSplit* split = nullptr);

struct PositionLoss {
  double loss = 0;                  // mean over every position and batch
  std::vector<double> by_position;  // (block_size,) mean loss of the token predicted at each position
  int64_t tokens = 0;               // tokens scored
};

// Like estimate_loss, but keeps the loss of each position of the context. Windows of `length` tokens (0: the
// model's block_size) read the table's rows shift … shift + length − 1.
// `scored` is called after each batch with the count so far (a progress bar).
PositionLoss evaluate_positions(GPT& model, const std::vector<int32_t>& tokens, int batches, int batch_size,
                                uint64_t seed, bool bf16, const torch::Device& device, int64_t length = 0,
                                int64_t shift = 0, const std::function<void(int)>& scored = nullptr);

// Does the model rely on where a window starts? The same windows (length block_size − max(shifts)) evaluated at
// each start row s of the table. Shift 0 is the ordinary evaluation when max(shifts) is 0.
struct ShiftLoss {
  int64_t length = 0;
  std::vector<int64_t> shifts;
  std::vector<PositionLoss> at;  // one per shift
};
ShiftLoss evaluate_shifts(GPT& model, const std::vector<int32_t>& tokens, int batches, int batch_size, uint64_t seed,
                          bool bf16, const torch::Device& device, const std::vector<int64_t>& shifts,
                          const std::function<void(int)>& scored = nullptr);  // counts batches over every shift

}  // namespace poslab
