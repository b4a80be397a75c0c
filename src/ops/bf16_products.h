// Matrix products of bfloat16 on the CPU without bf16 hardware.
//
// Under bf16 autocast LibTorch multiplies bf16 through oneDNN. Where the CPU has AVX512-BF16 or AMX that runs in
// hardware; elsewhere (AVX2) LibTorch emulates it, ~12x slower than float (measured on an AVX2-only AMD EPYC:
// 6.5 s per default training step in bf16 against ~0.53 s in float32). There poslab widens the bf16 operands to
// float (exact: every bf16 value is a float), multiplies them with the float BLAS (products summed in float, as
// oneDNN sums them) and rounds the result to bf16: the same rounding points as autocast, at float's speed.
#pragma once

#include <torch/torch.h>

namespace poslab {

// Whether bf16 products are widened to float: kernel_paths().bf16_products (util/kernel_paths.h) is "float" (by
// default where the CPU has no bf16 hardware; measured or forced otherwise).
bool bf16_products_in_float();

// Whether x's products in a model forward are widened: x on the CPU under bf16 autocast, and
// bf16_products_in_float().
bool widen_bf16_products(const torch::Tensor& x);

// x W^T + b as autocast's bf16 linear computes it (x, W and b rounded to bf16, the result rounded to bf16), the
// product in float; autograd records it (its backward multiplies in float too). x: (N, C_in) float or bf16;
// W: (C_out, C_in); b: (C_out) or undefined. Returns (N, C_out) bf16.
torch::Tensor widened_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b);

// out = a b for 2-D CPU tensors (float or bf16, any mix), multiplied in float and written in out's dtype.
void widened_mm_out(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b);

}  // namespace poslab
