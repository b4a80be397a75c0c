// GELU as one op for bfloat16 on CPU (forward and backward); LibTorch 1.13's bf16 gelu and gelu_backward take
// ~3.6 ms per (16, 128, 512) activation together, this ~2.2 ms (measured, one thread).
#pragma once

#include <torch/torch.h>

namespace poslab {

// torch::gelu (exact erf form) of x. bfloat16 CPU input: poslab's fused kernel, result and gradient rounded once
// from float (tests/ops/test_gelu.cpp); any other input: torch::gelu.
torch::Tensor gelu(const torch::Tensor& x);

// gelu(x + bias) for x (..., C) and bias (C). bfloat16 CPU x with a float32 bias: one op that adds the bias in
// float (no bf16 copy of it, no broadcast copy into a matrix product's output) and gives the bias its float32
// gradient, summed in a fixed order; otherwise torch::gelu(x + bias).
torch::Tensor bias_gelu(const torch::Tensor& x, const torch::Tensor& bias);

// The bf16 kernels of both on buffers the caller owns (the whole-model pass, model/direct_pass.h): x, y, dy, dx
// contiguous bfloat16 of one shape (dx may be dy: in place), b (C) float32. The bias's gradient is summed per
// chunk of kBiasGeluChunk rows into a row of db_parts (bias_gelu_grad_chunks(N), C) float32, overwritten; their
// column sums, in row order, are the gradient.
inline constexpr int64_t kBiasGeluChunk = 256;
int64_t bias_gelu_grad_chunks(int64_t N);
void gelu_bf16_out(const torch::Tensor& x, torch::Tensor& y);
void gelu_backward_bf16_out(const torch::Tensor& x, const torch::Tensor& dy, torch::Tensor& dx);
void bias_gelu_bf16_out(const torch::Tensor& x2, const torch::Tensor& b, torch::Tensor& y);
void bias_gelu_backward_bf16_out(const torch::Tensor& x2, const torch::Tensor& b, const torch::Tensor& dy,
                                 torch::Tensor& dx, torch::Tensor& db_parts);

}  // namespace poslab
