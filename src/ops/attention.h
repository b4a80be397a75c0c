// Causal self-attention of all heads as one op on the CPU, forward and backward.
#pragma once

#include <torch/torch.h>

namespace poslab {

// qkv: (B, T, 3C) float32 or bfloat16 on the CPU, the c_attn output [q | k | v] with C = n_head * hs. Returns
// y (B, T, C) in qkv's dtype, heads side by side as c_proj reads them:
//   y[b, i, h] = sum_{j <= i} softmax_j(q[b, i, h] . k[b, j, h] / sqrt(hs)) v[b, j, h].
// Per (sequence, head), in float, in buffers that stay in cache: the scores, mask, softmax and weighted sum, and
// in backward their gradients (attention_kernel.h); q, k and v are read, and y and dqkv written, in place — no
// split, transpose or contiguous copies. Equals LibTorch's bmm + masked softmax + bmm to float rounding (bf16: each
// result rounded once) — tests/ops/test_attention.cpp. No attention dropout.
torch::Tensor causal_attention(const torch::Tensor& qkv, int64_t n_head);

// The same on buffers the caller owns (the whole-model pass, model/direct_pass.h), all contiguous in qkv's
// dtype but p: y (B, T, C) and the probabilities p (B * n_head, T, T) float32, written; backward reads qkv and p,
// and writes dqkv (B, T, 3C) from dy (B, T, C).
void causal_attention_forward_out(const torch::Tensor& qkv, int64_t n_head, torch::Tensor& y, torch::Tensor& p);
void causal_attention_backward_out(const torch::Tensor& qkv, const torch::Tensor& p, const torch::Tensor& dy,
                                   int64_t n_head, torch::Tensor& dqkv);

}  // namespace poslab
