#include "ops/gelu.h"

#include "ops/bf16_bits.h"
#include "ops/gelu_kernel.h"
#include "util/parallel.h"

namespace poslab {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

torch::Tensor gelu_forward(const torch::Tensor& x) {
  torch::Tensor y = torch::empty_like(x);
  gelu_bf16_out(x, y);
  return y;
}

struct FusedGelu : public torch::autograd::Function<FusedGelu> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x) {
    ctx->save_for_backward({x});
    return gelu_forward(x);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_output) {
    const torch::Tensor x = ctx->get_saved_variables()[0];
    const torch::Tensor dy = grad_output[0].to(torch::kBFloat16).contiguous();
    torch::Tensor dx = torch::empty_like(x);
    gelu_backward_bf16_out(x, dy, dx);
    return {dx};
  }
};

torch::Tensor bias_forward_impl(const torch::Tensor& x2, const torch::Tensor& b) {
  torch::Tensor y = torch::empty_like(x2);
  bias_gelu_bf16_out(x2, b, y);
  return y;
}

struct FusedBiasGelu : public torch::autograd::Function<FusedBiasGelu> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x2, const torch::Tensor& b) {
    ctx->save_for_backward({x2, b});
    return bias_forward_impl(x2, b);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_output) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x2 = saved[0], &b = saved[1];
    const torch::Tensor dy = grad_output[0].to(torch::kBFloat16).contiguous();
    torch::Tensor dx = torch::empty_like(x2);
    torch::Tensor db_parts = torch::empty({bias_gelu_grad_chunks(x2.size(0)), x2.size(1)});
    bias_gelu_backward_bf16_out(x2, b, dy, dx, db_parts);
    return {dx, db_parts.sum(0)};
  }
};

}  // namespace

int64_t bias_gelu_grad_chunks(int64_t N) { return (N + kBiasGeluChunk - 1) / kBiasGeluChunk; }

void gelu_bf16_out(const torch::Tensor& x, torch::Tensor& y) {
  const uint16_t* xp = bf16_bits(x);
  uint16_t* yp = bf16_bits(y);
  parallel_for(0, x.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) { gelu_bf16(xp + b, yp + b, e - b); });
}

void gelu_backward_bf16_out(const torch::Tensor& x, const torch::Tensor& dy, torch::Tensor& dx) {
  const uint16_t *xp = bf16_bits(x), *dyp = bf16_bits(dy);
  uint16_t* dxp = bf16_bits(dx);
  parallel_for(0, x.numel(), kElementwiseGrain,
               [&](int64_t b, int64_t e) { gelu_backward_bf16(xp + b, dyp + b, dxp + b, e - b); });
}

void bias_gelu_bf16_out(const torch::Tensor& x2, const torch::Tensor& b, torch::Tensor& y) {
  const int64_t N = x2.size(0), C = x2.size(1);
  const uint16_t* xp = bf16_bits(x2);
  const float* bp = b.data_ptr<float>();
  uint16_t* yp = bf16_bits(y);
  parallel_for(0, N, std::max<int64_t>(1, kElementwiseGrain / C),
               [&](int64_t lo, int64_t hi) { bias_gelu_rows_bf16(xp, bp, yp, lo, hi, C); });
}

void bias_gelu_backward_bf16_out(const torch::Tensor& x2, const torch::Tensor& b, const torch::Tensor& dy,
                                 torch::Tensor& dx, torch::Tensor& db_parts) {
  const int64_t N = x2.size(0), C = x2.size(1);
  db_parts.zero_();  // the kernel adds each row's float gradient into its chunk's row
  const uint16_t *xp = bf16_bits(x2), *dyp = bf16_bits(dy);
  const float* bp = b.data_ptr<float>();
  uint16_t* dxp = bf16_bits(dx);
  float* dbp = db_parts.data_ptr<float>();
  parallel_for(0, db_parts.size(0), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c)
      bias_gelu_backward_rows_bf16(xp, bp, dyp, dxp, dbp + c * C, c * kBiasGeluChunk,
                                   std::min(N, (c + 1) * kBiasGeluChunk), C);
  });
}

torch::Tensor bias_gelu(const torch::Tensor& x, const torch::Tensor& bias) {
  if (!x.device().is_cpu() || x.scalar_type() != torch::kBFloat16 || bias.scalar_type() != torch::kFloat32 ||
      bias.dim() != 1 || bias.size(0) != x.size(-1) || !bias.device().is_cpu())
    return torch::gelu(x + bias);
  const int64_t C = x.size(-1);
  const torch::Tensor x2 = x.reshape({-1, C}).contiguous(), b = bias.contiguous();
  const bool grad = torch::GradMode::is_enabled() && (x.requires_grad() || bias.requires_grad());
  return (grad ? FusedBiasGelu::apply(x2, b) : bias_forward_impl(x2, b)).view(x.sizes());
}

torch::Tensor gelu(const torch::Tensor& x) {
  if (!x.device().is_cpu() || x.scalar_type() != torch::kBFloat16) return torch::gelu(x);
  const torch::Tensor c = x.contiguous();
  if (torch::GradMode::is_enabled() && x.requires_grad()) return FusedGelu::apply(c);
  return gelu_forward(c);
}

}  // namespace poslab
