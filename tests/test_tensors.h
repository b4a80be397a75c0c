// Shared test helpers that need LibTorch (test_util.h stays torch-free).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace poslab::test {

// A float64 tensor of i.i.d. N(0, 1) entries, the same for the same seed.
inline torch::Tensor gaussian(std::vector<int64_t> shape, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randn(shape, torch::kFloat64);
}

}  // namespace poslab::test
