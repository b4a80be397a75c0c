// Random training windows from a token stream, from a seeded generator whose state can be saved.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace poslab {

// (x, y): (B, T) int64 inputs and targets.
using Batch = std::pair<torch::Tensor, torch::Tensor>;

// The batch on `device`. To a GPU through pinned host memory, copied asynchronously: the host does not wait for
// the copy (LibTorch's caching host allocator keeps the pinned buffer until the copy is done), so the next batch
// is drawn while this one is still on its way. On the CPU: the batch itself.
Batch to_device(const Batch& batch, const torch::Device& device);

class BatchSampler {
 public:
  // tokens: the split to sample from; needs at least block_size + 1 ids.
  BatchSampler(const std::vector<int32_t>& tokens, int batch_size, int block_size, uint64_t seed);

  // x: (B, T) int64 inputs; y: (B, T) int64 targets, x shifted left by one.
  Batch next();

  std::string state() const;                 // the generator's state, for checkpoints
  void set_state(const std::string& state);  // throws poslab::Error on a malformed state

 private:
  torch::Tensor data_;    // (N,) int64 token ids
  torch::Tensor window_;  // (T + 1,) int64 offsets 0..T
  int batch_size_;
  int block_size_;
  std::mt19937_64 rng_;
};

}  // namespace poslab
