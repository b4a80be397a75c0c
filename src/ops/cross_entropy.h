// Softmax cross-entropy fused into one pass over the logits (forward and gradient together).
#pragma once

#include <torch/torch.h>

namespace poslab {

// Mean over rows of logsumexp(logits_i) - logits_i[targets_i], for (N, V) logits in float32 or bfloat16 (read
// as they are: no float copy of a bf16 table) and (N,) int64 targets in [0, V). Returns a 0-dim float32 tensor.
// When the logits require a gradient it is computed in the same pass, (softmax - onehot) / N in the logits'
// dtype, and the backward only scales it: log_softmax, nll_loss, their backward passes and the dtype casts
// become one op. Equal to torch::nn::functional::cross_entropy to float rounding (tests/model/test_cross_entropy).
// `weight` multiplies the result and its gradient (a loss scaled for gradient accumulation costs no extra pass).
torch::Tensor fused_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, double weight = 1.0);

// Shared by the cross-entropy ops. The targets as contiguous int64, every one checked to lie in [0, V) (the
// error names `op`, the row and the value).
torch::Tensor checked_targets(const torch::Tensor& targets, int64_t V, const char* op);
// weight * the mean of (N,) float32 per-row losses, summed in row order (the same whatever the threads or
// chunks): a 0-dim float32 tensor.
torch::Tensor mean_row_loss(const torch::Tensor& losses, double weight);

}  // namespace poslab
