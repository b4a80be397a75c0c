// LayerNorm as one op whose output may be bfloat16: under bf16 autocast the matrix product after it then reads
// it without a cast, and its gradient comes back in bf16 without one either.
#pragma once

#include <torch/torch.h>

namespace poslab {

// LayerNorm over the last dim of float32 x (..., C) with weight (C,) and optional bias, CPU. The result is
// bfloat16 when bf16_out, else float32; statistics and gradients are float32. Equals torch::layer_norm (then
// a cast to bf16) to float rounding (tests/ops/test_layer_norm.cpp). Gradients of weight and bias are summed
// in fixed chunks of rows, so they do not depend on the thread count.
torch::Tensor fused_layer_norm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                               double eps, bool bf16_out);

}  // namespace poslab
