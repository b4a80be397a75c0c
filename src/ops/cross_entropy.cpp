#include "ops/cross_entropy.h"

#include <ATen/record_function.h>

#include "ops/cross_entropy_kernel.h"
#include "util/parallel.h"

namespace poslab {
namespace {

// Returns the mean loss; fills `grad` (same shape and dtype as logits) when it is defined.
torch::Tensor cross_entropy_pass(const torch::Tensor& logits, const torch::Tensor& targets, double weight,
                                 torch::Tensor grad) {
  RECORD_FUNCTION("poslab::fused_cross_entropy", std::vector<c10::IValue>());
  TORCH_CHECK(logits.dim() == 2 && targets.dim() == 1 && targets.size(0) == logits.size(0),
              "fused_cross_entropy: expected (N, V) logits and (N,) targets, got ", logits.sizes(), " and ",
              targets.sizes());
  TORCH_CHECK(logits.scalar_type() == torch::kFloat32 || logits.scalar_type() == torch::kBFloat16,
              "fused_cross_entropy: logits must be float32 or bfloat16, got ", logits.scalar_type());
  TORCH_CHECK(logits.device().is_cpu(), "fused_cross_entropy: CPU only");
  const torch::Tensor x = logits.contiguous();
  const int64_t N = x.size(0), V = x.size(1);
  const torch::Tensor t = checked_targets(targets, V, "fused_cross_entropy");
  const int64_t* tp = t.data_ptr<int64_t>();
  torch::Tensor losses = torch::empty({N}, torch::kFloat32);
  float* lp = losses.data_ptr<float>();
  const float scale = static_cast<float>(weight / static_cast<double>(N));
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(V, 1));
  if (x.scalar_type() == torch::kFloat32) {
    const float* xp = x.data_ptr<float>();
    float* gp = grad.defined() ? grad.data_ptr<float>() : nullptr;
    parallel_for(0, N, grain, [&](int64_t b, int64_t e) { cross_entropy_rows(xp, tp, b, e, V, lp, gp, scale); });
  } else {
    const auto* xp = reinterpret_cast<const uint16_t*>(x.data_ptr<at::BFloat16>());
    auto* gp = grad.defined() ? reinterpret_cast<uint16_t*>(grad.data_ptr<at::BFloat16>()) : nullptr;
    parallel_for(0, N, grain, [&](int64_t b, int64_t e) { cross_entropy_rows_bf16(xp, tp, b, e, V, lp, gp, scale); });
  }
  return mean_row_loss(losses, weight);
}

struct FusedCrossEntropy : public torch::autograd::Function<FusedCrossEntropy> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                               const torch::Tensor& targets, double weight) {
    torch::Tensor grad = torch::empty({logits.size(0), logits.size(1)}, logits.options());
    torch::Tensor loss = cross_entropy_pass(logits, targets, weight, grad);
    ctx->save_for_backward({grad});
    return loss;
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_output) {
    torch::Tensor grad = ctx->get_saved_variables()[0];
    const torch::Tensor& g = grad_output[0];
    if (!(g.numel() == 1 && g.item<double>() == 1.0)) grad = grad * g.to(grad.scalar_type());
    return {grad, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor checked_targets(const torch::Tensor& targets, int64_t V, const char* op) {
  const torch::Tensor t = targets.to(torch::kLong).contiguous();
  const int64_t* tp = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i)
    TORCH_CHECK(tp[i] >= 0 && tp[i] < V, op, ": target ", tp[i], " at row ", i, " is outside [0, ", V, ")");
  return t;
}

torch::Tensor mean_row_loss(const torch::Tensor& losses, double weight) {
  const float* lp = losses.data_ptr<float>();
  const int64_t N = losses.numel();
  double total = 0;
  for (int64_t i = 0; i < N; ++i) total += lp[i];
  return torch::full({}, weight * total / static_cast<double>(N), torch::kFloat32);
}

torch::Tensor fused_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, double weight) {
  if (torch::GradMode::is_enabled() && logits.requires_grad()) return FusedCrossEntropy::apply(logits, targets, weight);
  return cross_entropy_pass(logits, targets, weight, torch::Tensor());
}

}  // namespace poslab
