// The search's timer (tune/autotune_search.h) on the model itself: forward + backward passes of a fixed batch.
#pragma once

#include <torch/torch.h>

#include "config/config.h"
#include "model/batch_split.h"
#include "model/gpt.h"
#include "tune/autotune_search.h"

namespace poslab {

// `warmup` then `reps` forward + backward passes of a fixed batch of cfg's shape (train.batch_size × block_size,
// cut by `split`, or whole for batch_split=none), under cfg's dtype; the median. Gradients are cleared after each
// pass and the generators' states are restored, so training goes on as if untimed. On a GPU each pass is timed from
// an empty queue to an empty queue. Paths whose pass fails with a LibTorch error (a GPU's attention kernel that does
// not take this dtype or head size) throw KernelPathUnavailable with the error and the warnings before it.
PathTimer model_pass_timer(GPT& model, BatchSplit& split, const Config& cfg, const torch::Device& device,
                           int warmup = 1, int reps = 2);

}  // namespace poslab
