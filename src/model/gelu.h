// GELU as one op for bfloat16 on CPU (forward and backward); LibTorch 1.13's bf16 gelu converts element by
// element through slow paths (~7 ms per (16, 128, 512) activation, forward plus backward, measured).
#pragma once

#include <torch/torch.h>

namespace poslab {

// torch::gelu (exact erf form) of x. bfloat16 CPU input: poslab's fused kernel, result and gradient rounded once
// from float (tests/model/test_gelu.cpp); any other input: torch::gelu.
torch::Tensor gelu(const torch::Tensor& x);

}  // namespace poslab
