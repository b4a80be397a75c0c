// Loss estimates on a token split, with their own seeded sampler so that training's RNG is untouched.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "model/gpt.h"

namespace poslab {

// Mean loss over `batches` random windows (same windows for the same seed), in eval mode without grad;
// the model's previous train/eval mode is restored.
double estimate_loss(GPT& model, const std::vector<int32_t>& tokens, int batches, int batch_size, uint64_t seed,
                     bool bf16, const torch::Device& device);

}  // namespace poslab
