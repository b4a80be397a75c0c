// One optimizer update, shared by the trainer and the benchmark.
#pragma once

#include <torch/torch.h>

#include "config/config.h"
#include "data/batches.h"
#include "model/gpt.h"

namespace poslab {

struct StepResult {
  torch::Tensor loss;       // mean loss, 0-dim (already read once for the finiteness check)
  double grad_norm = 0;     // global gradient norm before clipping
  bool finite = true;       // loss and gradient norm are finite; when not, the optimizer did not step
};

// grad_accum micro-batches (forward under bf16 autocast when train.dtype says so), backward, clip, AdamW step.
// A non-finite loss or gradient norm skips the optimizer step (the caller decides to stop or go on).
StepResult train_step(GPT& model, torch::optim::AdamW& optimizer, BatchSampler& sampler, const TrainConfig& t,
                      double lr, const torch::Device& device);

}  // namespace poslab
