#include "ops/layer_norm.h"

#include <algorithm>

#include "ops/layer_norm_kernel.h"
#include "util/parallel.h"

namespace poslab {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

struct Stats {
  torch::Tensor y, mean, rstd;
};

Stats layer_norm_forward(const torch::Tensor& x2, const torch::Tensor& w, const torch::Tensor& b, double eps,
                         bool bf16_out) {
  const int64_t N = x2.size(0), C = x2.size(1);
  Stats s{torch::empty({N, C}, bf16_out ? torch::kBFloat16 : torch::kFloat32), torch::empty({N}), torch::empty({N})};
  layer_norm_forward_out(x2, w, b, eps, s.y, s.mean, s.rstd);
  return s;
}

// b: the bias, or an empty tensor for none.
struct FusedLayerNorm : public torch::autograd::Function<FusedLayerNorm> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x2, const torch::Tensor& w,
                               const torch::Tensor& b, double eps, bool bf16_out) {
    Stats s = layer_norm_forward(x2, w, b, eps, bf16_out);
    ctx->save_for_backward({x2, w, s.mean, s.rstd});
    ctx->saved_data["has_bias"] = b.numel() > 0;
    return s.y;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_output) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x2 = saved[0], &w = saved[1], &mean = saved[2], &rstd = saved[3];
    const bool has_bias = ctx->saved_data["has_bias"].toBool();
    const int64_t N = x2.size(0), C = x2.size(1), chunks = layer_norm_grad_chunks(N);
    torch::Tensor dy = grad_output[0].contiguous();
    if (dy.scalar_type() != torch::kBFloat16 && dy.scalar_type() != torch::kFloat32) dy = dy.to(torch::kFloat32);
    torch::Tensor dx = torch::empty({N, C});
    torch::Tensor dw_parts = torch::empty({chunks, C}), db_parts = torch::empty({chunks, C});
    layer_norm_backward_out(x2, w, mean, rstd, dy, dx, dw_parts, has_bias ? db_parts.data_ptr<float>() : nullptr);
    return {dx, dw_parts.sum(0), has_bias ? db_parts.sum(0) : torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

int64_t layer_norm_grad_chunks(int64_t N) { return (N + kLayerNormChunk - 1) / kLayerNormChunk; }

void layer_norm_forward_out(const torch::Tensor& x2, const torch::Tensor& w, const torch::Tensor& b, double eps,
                            torch::Tensor& y, torch::Tensor& mean, torch::Tensor& rstd) {
  const int64_t N = x2.size(0), C = x2.size(1);
  const float* xp = x2.data_ptr<float>();
  const float* wp = w.data_ptr<float>();
  const float* bp = b.defined() && b.numel() > 0 ? b.data_ptr<float>() : nullptr;
  float *mp = mean.data_ptr<float>(), *rp = rstd.data_ptr<float>();
  const int64_t grain = std::max<int64_t>(1, 16384 / C);
  if (y.scalar_type() == torch::kBFloat16) {
    auto* yp = reinterpret_cast<uint16_t*>(y.data_ptr<at::BFloat16>());
    parallel_for(0, N, grain, [&](int64_t lo, int64_t hi) {
      layer_norm_rows_bf16(xp, wp, bp, yp, mp, rp, lo, hi, C, static_cast<float>(eps));
    });
  } else {
    float* yp = y.data_ptr<float>();
    parallel_for(0, N, grain, [&](int64_t lo, int64_t hi) {
      layer_norm_rows(xp, wp, bp, yp, mp, rp, lo, hi, C, static_cast<float>(eps));
    });
  }
}

void layer_norm_backward_out(const torch::Tensor& x2, const torch::Tensor& w, const torch::Tensor& mean,
                             const torch::Tensor& rstd, const torch::Tensor& dy, torch::Tensor& dx,
                             torch::Tensor& dw_parts, float* db_parts) {
  const int64_t N = x2.size(0), C = x2.size(1), chunks = layer_norm_grad_chunks(N);
  const float *xp = x2.data_ptr<float>(), *wp = w.data_ptr<float>();
  const float *mp = mean.data_ptr<float>(), *rp = rstd.data_ptr<float>();
  float *dxp = dx.data_ptr<float>(), *dwp = dw_parts.data_ptr<float>();
  dw_parts.zero_();
  if (db_parts != nullptr) std::fill(db_parts, db_parts + chunks * C, 0.0f);
  parallel_for(0, chunks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) {
      const int64_t r0 = c * kLayerNormChunk, r1 = std::min(N, r0 + kLayerNormChunk);
      float* db = db_parts != nullptr ? db_parts + c * C : nullptr;
      if (dy.scalar_type() == torch::kBFloat16)
        layer_norm_backward_rows_bf16(xp, wp, mp, rp, reinterpret_cast<const uint16_t*>(dy.data_ptr<at::BFloat16>()),
                                      dxp, dwp + c * C, db, r0, r1, C);
      else
        layer_norm_backward_rows(xp, wp, mp, rp, dy.data_ptr<float>(), dxp, dwp + c * C, db, r0, r1, C);
    }
  });
}

torch::Tensor fused_layer_norm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                               double eps, bool bf16_out) {
  const int64_t C = x.size(-1);
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32 && x.device().is_cpu(),
              "fused_layer_norm: float32 CPU input and weight expected");
  TORCH_CHECK(weight.numel() == C && (!bias.defined() || bias.numel() == C),
              "fused_layer_norm: weight and bias must have ", C, " elements");
  const torch::Tensor x2 = x.reshape({-1, C}).contiguous();
  auto out_shape = x.sizes().vec();
  const bool grad = torch::GradMode::is_enabled() &&
                    (x.requires_grad() || weight.requires_grad() || (bias.defined() && bias.requires_grad()));
  // No bias: an empty tensor stands in (an undefined one cannot be an input of an autograd function).
  const torch::Tensor b = bias.defined() ? bias : torch::empty({0});
  torch::Tensor y =
      grad ? FusedLayerNorm::apply(x2, weight, b, eps, bf16_out) : layer_norm_forward(x2, weight, b, eps, bf16_out).y;
  return y.view(out_shape);
}

}  // namespace poslab
