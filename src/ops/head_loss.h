// The output head (logits = x W^T, W the tied token embedding) and the softmax cross-entropy as one op on CPU,
// in chunks of rows, so that the (N, V) logits are never written out: each chunk's logits are made, turned into
// their gradient and multiplied back while they are still in cache.
#pragma once

#include <torch/torch.h>

namespace poslab {

// Mean cross-entropy of x W^T against targets, times `weight`. x: (N, C) float32 or bfloat16 (the product then
// runs in bf16 with W rounded to bf16, as autocast does); W: (V, C) float32; targets: (N,) ids in [0, V).
// When a gradient is wanted it is computed in the same pass — for x as (softmax - onehot) W / N, for W as
// (softmax - onehot)^T x / N — so backward only scales. Equal to fused_cross_entropy(x W^T, targets) to float
// rounding (tests/ops/test_head_loss.cpp). Returns a 0-dim float32 tensor.
torch::Tensor head_cross_entropy(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& targets,
                                 double weight = 1.0);

// The same with its gradients written into buffers the caller owns (the whole-model pass, model/direct_pass.h):
// dx (N, C) in x's dtype and, when dw is not null, *dw (V, C) float32 are overwritten. x float32, or bfloat16 with
// the products in bf16 (LibTorch's oneDNN kernels: what autocast runs with bf16_products=onednn) from a bf16 copy
// of W. `scratch` keeps the chunk's logits, the (N, V) gradient of the logits and the bf16 copies from call to
// call (made again when the shape or dtype changes).
struct HeadLossScratch {
  torch::Tensor logits, dlogits, losses, w, dw;
};
torch::Tensor head_cross_entropy_out(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& targets,
                                     double weight, torch::Tensor& dx, torch::Tensor* dw, HeadLossScratch& scratch);

}  // namespace poslab
