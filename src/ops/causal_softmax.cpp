#include "ops/causal_softmax.h"

#include "ops/causal_softmax_kernel.h"
#include "util/parallel.h"

namespace poslab {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

void check(const torch::Tensor& s) {
  TORCH_CHECK(s.dim() == 3 && s.size(1) == s.size(2), "causal_softmax: expected (BH, T, T) scores, got ", s.sizes());
  TORCH_CHECK(s.scalar_type() == torch::kFloat32 || s.scalar_type() == torch::kBFloat16,
              "causal_softmax: scores must be float32 or bfloat16, got ", s.scalar_type());
  TORCH_CHECK(s.device().is_cpu(), "causal_softmax: CPU only");
}

torch::Tensor softmax_forward(const torch::Tensor& scores, double scale) {
  const torch::Tensor s = scores.contiguous();
  torch::Tensor out = torch::empty_like(s);
  const int64_t T = s.size(2), rows = s.size(0) * T;
  const float k = static_cast<float>(scale);
  const int64_t grain = std::max<int64_t>(1, 16384 / T);
  if (s.scalar_type() == torch::kFloat32) {
    const float* sp = s.data_ptr<float>();
    float* op = out.data_ptr<float>();
    parallel_for(0, rows, grain, [&](int64_t b, int64_t e) { causal_softmax_rows(sp, op, b, e, T, k); });
  } else {
    const auto* sp = reinterpret_cast<const uint16_t*>(s.data_ptr<at::BFloat16>());
    auto* op = reinterpret_cast<uint16_t*>(out.data_ptr<at::BFloat16>());
    parallel_for(0, rows, grain, [&](int64_t b, int64_t e) { causal_softmax_rows_bf16(sp, op, b, e, T, k); });
  }
  return out;
}

struct CausalSoftmax : public torch::autograd::Function<CausalSoftmax> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& scores, double scale) {
    torch::Tensor p = softmax_forward(scores, scale);
    ctx->save_for_backward({p});
    ctx->saved_data["scale"] = scale;
    return p;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_output) {
    const torch::Tensor p = ctx->get_saved_variables()[0];
    const torch::Tensor dp = grad_output[0].to(p.scalar_type()).contiguous();
    const float k = static_cast<float>(ctx->saved_data["scale"].toDouble());
    torch::Tensor ds = torch::empty_like(p);
    const int64_t T = p.size(2), rows = p.size(0) * T;
    const int64_t grain = std::max<int64_t>(1, 16384 / T);
    if (p.scalar_type() == torch::kFloat32) {
      const float *pp = p.data_ptr<float>(), *dpp = dp.data_ptr<float>();
      float* dsp = ds.data_ptr<float>();
      parallel_for(0, rows, grain,
                   [&](int64_t b, int64_t e) { causal_softmax_backward_rows(pp, dpp, dsp, b, e, T, k); });
    } else {
      const auto* pp = reinterpret_cast<const uint16_t*>(p.data_ptr<at::BFloat16>());
      const auto* dpp = reinterpret_cast<const uint16_t*>(dp.data_ptr<at::BFloat16>());
      auto* dsp = reinterpret_cast<uint16_t*>(ds.data_ptr<at::BFloat16>());
      parallel_for(0, rows, grain,
                   [&](int64_t b, int64_t e) { causal_softmax_backward_rows_bf16(pp, dpp, dsp, b, e, T, k); });
    }
    return {ds, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor causal_softmax(const torch::Tensor& scores, double scale) {
  check(scores);
  if (torch::GradMode::is_enabled() && scores.requires_grad()) return CausalSoftmax::apply(scores, scale);
  return softmax_forward(scores, scale);
}

}  // namespace poslab
