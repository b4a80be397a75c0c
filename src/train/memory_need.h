// What training a config needs in memory, reckoned from the config alone before anything is allocated, and the
// check that stops a run that cannot fit before it writes anything.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"
#include "util/memory.h"

namespace poslab {

struct MemoryNeed {
  int64_t parameters = 0;   // every parameter of the model (the position table included)
  int64_t weights = 0;      // bytes: the float32 weights
  int64_t gradients = 0;    // their float32 gradients
  int64_t optimizer = 0;    // AdamW's two moments
  int64_t activations = 0;  // what one micro-batch's forward keeps for its backward, at least (bf16 under
                            // train.dtype bfloat16: autocast keeps the products' outputs in bf16)
  int64_t total() const { return weights + gradients + optimizer + activations; }
};

// The need of one process training `cfg` with `vocab_size` token ids on `world_size` processes (each trains its
// share of the batch). A lower bound: the allocator's slack, LibTorch's workspaces and the data come on top.
MemoryNeed training_memory_need(const Config& cfg, int64_t vocab_size, int world_size = 1);

// Stops (poslab::Error) when the need is larger than the room: one line naming both sizes and the limit, and a hint
// fitted to what takes the room (and, on a GPU, to what else holds it). POSLAB_NO_MEMORY_CHECK=1 skips it. The room:
// this process's share of the machine's memory for a run on the CPU (memory_room, util/memory.h), its GPU's free
// memory for a run on CUDA (cuda_memory_room, util/cuda.h: one process per GPU).
void check_training_fits(const Config& cfg, int64_t vocab_size, int world_size, const MemoryRoom& room,
                         bool on_gpu = false);

// What scoring one batch of `batch` windows of `length` tokens needs beyond the model's weights (loaded already, so
// not in the room the caller measures), no gradients: the logits and their log-softmax in float (8 bytes a logit;
// 10 in bf16: the bf16 logits, their float copy, the log-softmax), and the larger of a layer's attention scores with
// their softmax (2 × 4 bytes a score) and its MLP's hidden layer. A lower bound, like training_memory_need.
int64_t scoring_memory_need(const ModelConfig& model, int64_t vocab_size, int64_t batch, int64_t length, bool bf16);

// Stops (poslab::Error) when scoring_memory_need is larger than the room, naming the option that sets the batch
// (`batch_option`, e.g. "--batch-size 4096") and the sizes, before any data is read or anything written.
// POSLAB_NO_MEMORY_CHECK=1 skips it.
void check_scoring_fits(const ModelConfig& model, int64_t vocab_size, int64_t batch, int64_t length, bool bf16,
                        const std::string& batch_option, const MemoryRoom& room);

}  // namespace poslab
