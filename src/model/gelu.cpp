#include "model/gelu.h"

#include <ATen/Parallel.h>

#include "model/gelu_kernel.h"

namespace poslab {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

constexpr int64_t kGrain = 16384;

const uint16_t* bits(const torch::Tensor& t) { return reinterpret_cast<const uint16_t*>(t.data_ptr<at::BFloat16>()); }
uint16_t* bits(torch::Tensor& t) { return reinterpret_cast<uint16_t*>(t.data_ptr<at::BFloat16>()); }

torch::Tensor forward_impl(const torch::Tensor& x) {
  torch::Tensor y = torch::empty_like(x);
  const uint16_t* xp = bits(x);
  uint16_t* yp = bits(y);
  at::parallel_for(0, x.numel(), kGrain, [&](int64_t b, int64_t e) { gelu_bf16(xp + b, yp + b, e - b); });
  return y;
}

struct FusedGelu : public torch::autograd::Function<FusedGelu> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x) {
    ctx->save_for_backward({x});
    return forward_impl(x);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_output) {
    const torch::Tensor x = ctx->get_saved_variables()[0];
    const torch::Tensor dy = grad_output[0].to(torch::kBFloat16).contiguous();
    torch::Tensor dx = torch::empty_like(x);
    const uint16_t *xp = bits(x), *dyp = bits(dy);
    uint16_t* dxp = bits(dx);
    at::parallel_for(0, x.numel(), kGrain,
                     [&](int64_t b, int64_t e) { gelu_backward_bf16(xp + b, dyp + b, dxp + b, e - b); });
    return {dx};
  }
};

}  // namespace

torch::Tensor gelu(const torch::Tensor& x) {
  if (!x.device().is_cpu() || x.scalar_type() != torch::kBFloat16) return torch::gelu(x);
  const torch::Tensor c = x.contiguous();
  if (torch::GradMode::is_enabled() && x.requires_grad()) return FusedGelu::apply(c);
  return forward_impl(c);
}

}  // namespace poslab
