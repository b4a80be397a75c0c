#include "ops/bf16_products.h"

#include <c10/core/impl/LocalDispatchKeySet.h>

#include <cstdlib>
#include <string>

#include "ops/autocast.h"
#include "ops/bf16_bits.h"
#include "util/kernel_paths.h"
#include "util/parallel.h"
#include "util/platform.h"
#include "util/simd_math.h"

namespace poslab {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// bf16 -> float and float -> bf16 (round to nearest even) in vectorised loops: LibTorch 1.13 converts one
// element at a time.
torch::Tensor widen(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  torch::Tensor out = torch::empty(c.sizes(), c.options().dtype(torch::kFloat32));
  const uint16_t* in = bf16_bits(c);
  float* o = out.data_ptr<float>();
  parallel_for(0, c.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) { simd::widen_bf16(in + b, o + b, e - b); });
  return out;
}

torch::Tensor narrow(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  torch::Tensor out = torch::empty(c.sizes(), c.options().dtype(torch::kBFloat16));
  const float* in = c.data_ptr<float>();
  uint16_t* o = bf16_bits(out);
  parallel_for(0, c.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) { simd::narrow_bf16(in + b, o + b, e - b); });
  return out;
}

// t's bf16 value (t itself when it is bf16 already), and that value in float.
torch::Tensor as_bf16(const torch::Tensor& t) { return t.scalar_type() == torch::kBFloat16 ? t : narrow(t); }
torch::Tensor rounded_float(const torch::Tensor& t) { return widen(as_bf16(t)); }

// t in float, exact; a transposed matrix stays a transposed view of its widened storage.
torch::Tensor to_float(const torch::Tensor& t) {
  if (t.scalar_type() != torch::kBFloat16) return t.to(torch::kFloat32);
  if (t.dim() == 2 && !t.is_contiguous() && t.t().is_contiguous()) return widen(t.t()).t();
  return widen(t);
}

// The linear layer's product in float from bf16-rounded operands, result rounded to bf16; its backward multiplies
// in float too. Keeps x as bf16 (not a float copy) and the rounded weight for backward.
struct WidenedLinear : public torch::autograd::Function<WidenedLinear> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w,
                               const torch::Tensor& b) {
    // Autocast would cast these float tensors straight back to bf16: the products run beneath it.
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
    const torch::Tensor xb = as_bf16(x), wf = rounded_float(w);
    const torch::Tensor xf = widen(xb);
    const bool has_bias = b.numel() > 0;  // no bias: an empty tensor (autograd takes no undefined input)
    const torch::Tensor y = has_bias ? torch::addmm(rounded_float(b), xf, wf.t()) : torch::mm(xf, wf.t());
    ctx->save_for_backward({xb, wf});
    ctx->saved_data["x_is_bf16"] = x.scalar_type() == torch::kBFloat16;
    ctx->saved_data["w_dtype"] = static_cast<int64_t>(w.scalar_type());
    ctx->saved_data["has_bias"] = has_bias;
    return narrow(y);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_output) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &xb = saved[0], &wf = saved[1];
    const torch::Tensor dyf = widen(as_bf16(grad_output[0]));  // the gradient of a bf16 output is bf16
    torch::Tensor dx, dw, db;
    if (ctx->needs_input_grad(0)) {
      dx = narrow(torch::mm(dyf, wf));  // autocast's cast of x to bf16: its gradient is rounded to bf16
      if (!ctx->saved_data["x_is_bf16"].toBool()) dx = widen(dx);
    }
    if (ctx->needs_input_grad(1))
      dw = torch::mm(dyf.t(), widen(xb)).to(static_cast<torch::ScalarType>(ctx->saved_data["w_dtype"].toInt()));
    if (ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(2)) db = dyf.sum(0);
    return {dx, dw, db};
  }
};

}  // namespace

bool bf16_products_in_float() { return kernel_paths().bf16_products == "float"; }

bool widen_bf16_products(const torch::Tensor& x) {
  return x.device().is_cpu() && cpu_autocast_bf16() && bf16_products_in_float();
}

torch::Tensor widened_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1) && (!b.defined() || b.numel() == w.size(0)),
              "widened_linear: expected (N, C_in) x, (C_out, C_in) W and (C_out) b, got ", x.sizes(), ", ", w.sizes(),
              b.defined() ? ", " + c10::str(b.sizes()) : std::string());
  TORCH_CHECK(x.device().is_cpu() && w.device().is_cpu(), "widened_linear: CPU only");
  return WidenedLinear::apply(x, w, b.defined() ? b : torch::empty({0}));
}

void widened_mm_out(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  const torch::Tensor af = to_float(a), bf = to_float(b);
  if (out.scalar_type() == torch::kFloat32 && out.is_contiguous()) {
    at::mm_out(out, af, bf);
    return;
  }
  const torch::Tensor y = torch::mm(af, bf);
  out.copy_(out.scalar_type() == torch::kBFloat16 ? narrow(y) : y);
}

}  // namespace poslab
