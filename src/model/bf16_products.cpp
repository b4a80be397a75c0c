#include "model/bf16_products.h"

#include <c10/core/impl/LocalDispatchKeySet.h>

#include <cstdlib>
#include <string>

#include "model/autocast.h"
#include "util/platform.h"

namespace poslab {
namespace {

// The float value of t rounded to bf16 (t itself widened when it is bf16 already).
torch::Tensor rounded_float(const torch::Tensor& t) {
  return t.scalar_type() == torch::kBFloat16 ? t.to(torch::kFloat32) : t.to(torch::kBFloat16).to(torch::kFloat32);
}

}  // namespace

bool choose_bf16_products_in_float(const char* env, bool cpu_has_bf16) {
  if (env == nullptr || *env == '\0') return !cpu_has_bf16;
  const std::string v = env;
  if (v == "float") return true;
  if (v == "onednn") return false;
  TORCH_CHECK(false, "POSLAB_BF16_PRODUCTS=", v, ": not a choice; use float (widen bf16 operands to float) or ",
              "onednn (LibTorch's bf16 kernels), or unset it to let poslab choose by the CPU");
}

bool bf16_products_in_float() {
  static const bool in_float = choose_bf16_products_in_float(std::getenv("POSLAB_BF16_PRODUCTS"), cpu_has_native_bf16());
  return in_float;
}

bool widen_bf16_products(const torch::Tensor& x) {
  return x.device().is_cpu() && cpu_autocast_bf16() && bf16_products_in_float();
}

torch::Tensor widened_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  // Autocast would cast these float tensors straight back to bf16: the ops below run beneath it.
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  const torch::Tensor xf = rounded_float(x), wf = rounded_float(w);
  const torch::Tensor y = b.defined() ? torch::addmm(rounded_float(b), xf, wf.t()) : torch::mm(xf, wf.t());
  return y.to(torch::kBFloat16);
}

void widened_mm_out(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  if (out.scalar_type() == torch::kFloat32 && out.is_contiguous()) {
    at::mm_out(out, a.to(torch::kFloat32), b.to(torch::kFloat32));
    return;
  }
  out.copy_(torch::mm(a.to(torch::kFloat32), b.to(torch::kFloat32)));
}

}  // namespace poslab
