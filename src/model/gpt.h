// GPT-2-style decoder whose only source of word order is the position table wpe.
//
// Dimensions: B = batch size, T = sequence length (<= block_size), C = n_embd, V = vocab_size,
//             nh = n_head, hs = C / nh (head size).
#pragma once

#include <torch/torch.h>

#include "config/config.h"

namespace poslab {

// LayerNorm with an optional bias (torch::nn::LayerNorm has no bias switch in LibTorch 1.13).
struct LayerNormImpl : torch::nn::Module {
  LayerNormImpl(int64_t n_embd, bool bias);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;  // (C,)
  torch::Tensor bias;    // (C,) or undefined
};
TORCH_MODULE(LayerNorm);

struct CausalSelfAttentionImpl : torch::nn::Module {
  CausalSelfAttentionImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x);  // (B, T, C) -> (B, T, C)

  // The attention paths, each from qkv (B, T, 3C) to y (B, T, C); forward picks one by device and dropout:
  torch::Tensor fused_attention(const torch::Tensor& qkv);  // CPU, no attention dropout: one op (ops/attention.h)
  torch::Tensor sdpa_attention(const torch::Tensor& qkv);   // LibTorch 2.x otherwise: scaled_dot_product_attention
  torch::Tensor bmm_attention(const torch::Tensor& qkv);    // LibTorch 1.13 otherwise: q kᵀ, causal softmax, p v

  torch::nn::Linear c_attn{nullptr};  // C -> 3C: q, k, v for all heads at once
  torch::nn::Linear c_proj{nullptr};  // C -> C
  torch::nn::Dropout attn_dropout{nullptr}, resid_dropout{nullptr};
  int64_t n_head;
  double dropout;
  torch::Tensor causal_bias;  // (block_size, block_size): 0 on and below the diagonal, -inf above; not a parameter
};
TORCH_MODULE(CausalSelfAttention);

struct MLPImpl : torch::nn::Module {
  MLPImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x);  // (B, T, C) -> (B, T, C)

  torch::nn::Linear c_fc{nullptr};    // C -> 4C
  torch::nn::Linear c_proj{nullptr};  // 4C -> C
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(MLP);

struct BlockImpl : torch::nn::Module {
  BlockImpl(const ModelConfig& cfg);
  torch::Tensor forward(torch::Tensor x);  // pre-LayerNorm residual block

  LayerNorm ln_1{nullptr};
  CausalSelfAttention attn{nullptr};
  LayerNorm ln_2{nullptr};
  MLP mlp{nullptr};
};
TORCH_MODULE(Block);

struct GPTImpl : torch::nn::Module {
  GPTImpl(const ModelConfig& cfg, int64_t vocab_size);

  // idx: (B, T) int64 token ids -> logits (B, T, V). The tokens sit at the table's rows position_offset …
  // position_offset + T − 1 (0 in training; poslab eval --shift moves them).
  torch::Tensor forward(const torch::Tensor& idx, int64_t position_offset = 0);
  // idx -> the final LayerNorm's output (B, T, C), what the head multiplies by wte.
  torch::Tensor hidden(const torch::Tensor& idx, int64_t position_offset = 0);
  // loss(forward(idx), targets, weight) without the (B, T, V) logits on CPU: head and cross-entropy as one op
  // in chunks of rows (ops/head_loss.h). Call it under the autocast guard, as forward.
  torch::Tensor forward_loss(const torch::Tensor& idx, const torch::Tensor& targets, double weight = 1.0);
  // Mean cross-entropy of logits against targets (B, T), computed in float32, times `weight` (slices of a batch,
  // gradient accumulation; the gradient is scaled too).
  static torch::Tensor loss(const torch::Tensor& logits, const torch::Tensor& targets, double weight = 1.0);

  // The position table (block_size, C); undefined when model.position is none.
  torch::Tensor position_table() const;
  int64_t num_params(bool include_position_table = true) const;

  ModelConfig cfg;
  int64_t vocab_size;
  torch::nn::Embedding wte{nullptr};  // (V, C) token embeddings, also the output head (tied)
  torch::nn::Embedding wpe{nullptr};  // (block_size, C) position table: learned, or fixed sinusoidal; null for none
  torch::nn::Dropout drop{nullptr};
  torch::nn::ModuleList h{nullptr};  // n_layer Blocks
  LayerNorm ln_f{nullptr};
};
TORCH_MODULE(GPT);

}  // namespace poslab
