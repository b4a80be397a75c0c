// The whole model's forward and backward written out, llm.c's way: every layer's activations and gradients in
// buffers allocated once per shape, poslab's kernels and the BLAS products called on them directly, no autograd
// graph and no allocation per op. It computes what GPT::forward_loss and backward compute (float32, CPU, no
// dropout); tests/model/test_direct_pass.cpp holds every parameter's gradient against autograd's.
#pragma once

#include <torch/torch.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "model/gpt.h"
#include "ops/head_loss.h"

namespace poslab {

class DirectPass {
 public:
  explicit DirectPass(GPT model);

  // Why the pass cannot run this model's step, or "" when it can: it runs float32 on the CPU, without dropout
  // in training.
  static std::string unsupported(const GPT& model, bool bf16, const torch::Device& device);

  // loss = weight * mean cross-entropy of the model on idx (B, T) against targets (B, T), as
  // GPT::forward_loss(idx, targets, weight); its gradient is added to the grad of every parameter that requires
  // one (a parameter without a grad gets one of this pass's buffers). Returns the loss, 0-dim float32.
  torch::Tensor forward_backward(const torch::Tensor& idx, const torch::Tensor& targets, double weight);

 private:
  // One block's saved activations, rows (B * T) by columns.
  struct Block {
    torch::Tensor x;                    // (N, C) the residual stream coming in
    torch::Tensor ln1, mean1, rstd1;    // ln_1's output (N, C) and statistics (N)
    torch::Tensor qkv;                  // (N, 3C)
    torch::Tensor att, p;               // heads' output (N, C); probabilities (B * nh, T, T)
    torch::Tensor mid;                  // (N, C) the stream after attention
    torch::Tensor ln2, mean2, rstd2;
    torch::Tensor pre, act;             // (N, 4C) c_fc's output and its GELU
  };

  void allocate(int64_t B, int64_t T);
  void forward(const int64_t* idx, int64_t B, int64_t T);
  void backward(const int64_t* idx, int64_t B, int64_t T);
  void embedding_backward(const int64_t* idx, int64_t B, int64_t T);

  // The gradient of p to write into: its grad, or (when it has none) a buffer of this pass now made its grad;
  // `fresh` says whether it must be overwritten rather than added to. Null when p needs no gradient.
  torch::Tensor* grad_of(const torch::Tensor& p, bool& fresh);
  void add_product(const torch::Tensor& p, const torch::Tensor& a, const torch::Tensor& b);  // grad(p) += a b
  void add_column_sum(const torch::Tensor& p, const torch::Tensor& d);  // grad(p) += the sum of d's rows

  GPT model_;
  int64_t B_ = 0, T_ = 0;
  std::vector<Block> blocks_;
  torch::Tensor x_out_, lnf_, meanf_, rstdf_;          // the last block's output and ln_f's
  torch::Tensor dx_, dtmp_, dln_, datt_, dqkv_, dact_;  // gradients, reused by every block
  torch::Tensor ln_dw_, ln_db_, col_sum_, dwte_;       // partial sums; a row of column sums; the head's dW
  HeadLossScratch head_;
  std::unordered_map<const void*, torch::Tensor> grads_;  // per parameter (its TensorImpl), the grad buffer
};

}  // namespace poslab
