// The residual connection x + f(x) as one op when the branch f(x) comes back in bfloat16 (under autocast) and
// the residual stream x is float32.
#pragma once

#include <torch/torch.h>

namespace poslab {

// x + y. float32 CPU x with a bfloat16 y of the same shape: one vectorised pass, and in backward the float32
// gradient passes to x as it is and to y rounded to bf16 once (LibTorch's mixed-dtype add takes a slow
// element-by-element path, ~0.3 ms per (16, 128, 128) add here). Otherwise: x + y.
torch::Tensor residual_add(const torch::Tensor& x, const torch::Tensor& y);

// The same on buffers the caller owns (the whole-model pass, model/direct_pass.h), contiguous, of one shape:
// out (float32) = x (float32) + y (bfloat16); and the branch's gradient, g (float32) rounded to bf16 into gy.
void residual_add_out(const torch::Tensor& x, const torch::Tensor& y, torch::Tensor& out);
void residual_branch_grad_out(const torch::Tensor& g, torch::Tensor& gy);

}  // namespace poslab
