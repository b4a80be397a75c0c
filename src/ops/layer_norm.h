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

// The same on buffers the caller owns (the whole-model pass, model/direct_pass.h). x2: (N, C) float32; b may be
// empty or undefined; y: (N, C) float32 or bfloat16; mean, rstd: (N,) float32.
void layer_norm_forward_out(const torch::Tensor& x2, const torch::Tensor& w, const torch::Tensor& b, double eps,
                            torch::Tensor& y, torch::Tensor& mean, torch::Tensor& rstd);
// Gradients of rows of kLayerNormChunk: dx (N, C) float32 overwritten; each chunk's weight gradient in a row of
// dw_parts (layer_norm_grad_chunks(N), C) and its bias gradient in a row of db_parts (the same size; null for no
// bias), both overwritten: their column sums, in row order, are the gradients. dy: float32 or bfloat16.
inline constexpr int64_t kLayerNormChunk = 256;
int64_t layer_norm_grad_chunks(int64_t N);
void layer_norm_backward_out(const torch::Tensor& x2, const torch::Tensor& w, const torch::Tensor& mean,
                             const torch::Tensor& rstd, const torch::Tensor& dy, torch::Tensor& dx,
                             torch::Tensor& dw_parts, float* db_parts);

}  // namespace poslab
