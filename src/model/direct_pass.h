// The whole model's forward and backward written out, llm.c's way: every layer's activations and gradients in
// buffers allocated once per shape, poslab's kernels and the BLAS products called on them directly, no autograd
// graph and no allocation per op. It computes what GPT::forward_loss and backward compute on the CPU without
// dropout, in float32 or under bf16 autocast (the same rounding points: activations after each LayerNorm, product,
// attention and GELU in bf16, the residual stream and every gradient of a parameter in float32, the products in
// bf16 from bf16 copies of the weights made once per call); tests/model/test_direct_pass.cpp holds every
// parameter's gradient against autograd's.
#pragma once

#include <torch/torch.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "model/gpt.h"
#include "ops/head_loss.h"
#include "util/kernel_paths.h"

namespace poslab {

class DirectPass {
 public:
  explicit DirectPass(GPT model);

  // Why the pass cannot run this model's step, or "" when it can: it runs float32 CPU parameters without dropout
  // in training; bf16 (autocast's) with bf16_products=onednn (util/kernel_paths.h), the paths' value or now's.
  static std::string unsupported(const GPT& model, bool bf16, const torch::Device& device,
                                 const std::string& bf16_products = kernel_paths().bf16_products);

  // loss = weight * mean cross-entropy of the model on idx (B, T) against targets (B, T), as
  // GPT::forward_loss(idx, targets, weight) computes it (under bf16 autocast when bf16); its gradient is added to
  // the grad of every parameter that requires one (a parameter without a grad gets one of this pass's buffers).
  // Returns the loss, 0-dim float32.
  torch::Tensor forward_backward(const torch::Tensor& idx, const torch::Tensor& targets, double weight,
                                 bool bf16 = false);
  // The same loss without the backward (evaluation): no gradient is touched.
  torch::Tensor loss(const torch::Tensor& idx, const torch::Tensor& targets, double weight, bool bf16 = false);

 private:
  // One block's saved activations, rows (B * T) by columns; the residual stream and statistics float32, the
  // others in the pass's dtype.
  struct Block {
    torch::Tensor x;                  // (N, C) the residual stream coming in
    torch::Tensor ln1, mean1, rstd1;  // ln_1's output (N, C) and statistics (N)
    torch::Tensor qkv;                // (N, 3C)
    torch::Tensor att, p;             // heads' output (N, C); probabilities (B * nh, T, T), float32
    torch::Tensor mid;                // (N, C) the stream after attention
    torch::Tensor ln2, mean2, rstd2;
    torch::Tensor pre, act;  // (N, 4C) c_fc's output (without its bias in bf16) and its GELU
  };

  // Checks the batch, sizes the buffers (and bf16's weight copies) for it; returns the ids as contiguous int64.
  torch::Tensor prepare(const torch::Tensor& idx, const torch::Tensor& targets, bool bf16);
  void allocate(int64_t B, int64_t T, bool bf16);
  void cast_weights();  // bf16: the copies of every Linear's weight and bias, refreshed
  const torch::Tensor& operand(const torch::Tensor& p) const;  // p as the products read it (its bf16 copy in bf16)
  // out = x W^T (+ b with bias), as autocast's linear computes it in bf16.
  void linear_out(torch::Tensor& out, const torch::Tensor& x, const torch::nn::Linear& layer, bool bias = true);
  // out = res + x W^T + b: the residual stream (float32) after a projection.
  void residual_out(torch::Tensor& out, const torch::Tensor& res, const torch::Tensor& x,
                    const torch::nn::Linear& layer);
  void gelu_forward(Block& b, const torch::nn::Linear& c_fc);
  void gelu_backward(const Block& b, const torch::nn::Linear& c_fc);  // dact_ in place (bf16: the bias's grad too)
  // The gradients of y = x W^T + b from dy: W's and b's added to their grads, x's written into dx.
  void linear_backward(const torch::nn::Linear& layer, const torch::Tensor& dy, const torch::Tensor& x,
                       torch::Tensor& dx, bool bias = true);
  const torch::Tensor& stream_grad();  // dx_ as the products read it: itself, or rounded to bf16 into dxb_
  void forward(const int64_t* idx, int64_t B, int64_t T);
  void backward(const int64_t* idx, int64_t B, int64_t T);
  void embedding_backward(const int64_t* idx, int64_t B, int64_t T);

  // The gradient of p to write into: its grad, or (when it has none) a buffer of this pass now made its grad;
  // `fresh` says whether it must be overwritten rather than added to. Null when p needs no gradient.
  torch::Tensor* grad_of(const torch::Tensor& p, bool& fresh);
  void add_product(const torch::Tensor& p, const torch::Tensor& a, const torch::Tensor& b);  // grad(p) += a b
  void add_column_sum(const torch::Tensor& p, const torch::Tensor& d);  // grad(p) += the sum of d's rows
  void add_to_grad(const torch::Tensor& p, const torch::Tensor& d);     // grad(p) += d (float32 or bf16)

  GPT model_;
  int64_t B_ = 0, T_ = 0;
  bool bf16_ = false;
  std::vector<Block> blocks_;
  torch::Tensor x_out_, lnf_, meanf_, rstdf_;         // the last block's output and ln_f's
  torch::Tensor dx_, dtmp_;                           // float32 gradients of the residual stream
  torch::Tensor dln_, datt_, dqkv_, dact_;            // gradients in the pass's dtype, reused by every block
  torch::Tensor dxb_, proj_;                          // bf16: dx_ rounded; a projection before its residual add
  torch::Tensor ln_dw_, ln_db_, gelu_db_;             // partial sums of chunks of rows
  torch::Tensor col_sum_, col_sum_bf16_, dw_, dwte_;  // rows of column sums; a weight's gradient (bf16); the head's dW
  HeadLossScratch head_;
  std::unordered_map<const void*, torch::Tensor> grads_;  // per parameter (its TensorImpl), the grad buffer
  std::unordered_map<const void*, torch::Tensor> casts_;  // bf16: per Linear parameter, its bf16 copy
};

}  // namespace poslab
