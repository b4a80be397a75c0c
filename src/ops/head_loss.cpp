#include "ops/head_loss.h"

#include <ATen/record_function.h>

#include "ops/bf16_products.h"
#include "ops/cross_entropy.h"
#include "ops/cross_entropy_kernel.h"

namespace poslab {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

constexpr int64_t kChunkBytes = 1 << 20;  // one chunk of logits: about half of this machine's per-core L2

struct Result {
  torch::Tensor loss, dx, dw;  // dx, dw undefined without a gradient
};

// Cross-entropy rows of one chunk of logits (m, V): losses and, when dlogits is not null, the gradient.
void chunk_loss(const torch::Tensor& logits, const int64_t* targets, float* losses, void* dlogits, float scale) {
  const int64_t m = logits.size(0), V = logits.size(1);
  if (logits.scalar_type() == torch::kFloat32)
    cross_entropy_rows(logits.data_ptr<float>(), targets, 0, m, V, losses, static_cast<float*>(dlogits), scale);
  else
    cross_entropy_rows_bf16(reinterpret_cast<const uint16_t*>(logits.data_ptr<at::BFloat16>()), targets, 0, m, V,
                            losses, static_cast<uint16_t*>(dlogits), scale);
}

// The chunked loop: each chunk's logits (in `logits`, rows x V), its losses, and with dlogits defined its gradient
// (into dlogits' rows) multiplied back into dx's rows while in cache.
template <typename ProductOut>
void chunk_loop(const torch::Tensor& x, const torch::Tensor& wp, const int64_t* tp, float scale, float* lp,
                torch::Tensor& logits, torch::Tensor& dlogits, torch::Tensor& dx, const ProductOut& product_out) {
  const int64_t N = x.size(0), rows = logits.size(0);
  for (int64_t r0 = 0; r0 < N; r0 += rows) {
    const int64_t m = std::min(rows, N - r0);
    const torch::Tensor xc = x.narrow(0, r0, m);
    torch::Tensor lc = logits.narrow(0, 0, m);
    product_out(lc, xc, wp.t());
    if (!dlogits.defined()) {
      chunk_loss(lc, tp + r0, lp + r0, nullptr, scale);
      continue;
    }
    torch::Tensor dc = dlogits.narrow(0, r0, m);
    chunk_loss(lc, tp + r0, lp + r0, dc.data_ptr(), scale);
    torch::Tensor dxc = dx.narrow(0, r0, m);
    product_out(dxc, dc, wp);  // (m, C), while the chunk's gradient is in cache
  }
}

int64_t chunk_rows(int64_t N, int64_t V, int64_t element_size) {
  return std::max<int64_t>(1, std::min<int64_t>(N, kChunkBytes / (V * element_size)));
}

Result head_loss_pass(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& targets, double weight,
                      bool grad) {
  RECORD_FUNCTION("poslab::head_cross_entropy", std::vector<c10::IValue>());
  const int64_t N = x.size(0), V = w.size(0);
  const auto dtype = x.scalar_type();
  const torch::Tensor wc = w.to(dtype);  // (V, C): the bf16 copy autocast would make, or w itself
  // bf16 without bf16 hardware: the products in float (bf16_products.h), from one widened copy of wc.
  const bool widen = dtype == torch::kBFloat16 && bf16_products_in_float();
  const torch::Tensor wp = widen ? wc.to(torch::kFloat32) : wc;
  const auto product_out = [widen](torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b) {
    if (widen)
      widened_mm_out(out, a, b);
    else
      at::mm_out(out, a, b);
  };
  const torch::Tensor t = checked_targets(targets, V, "head_cross_entropy");
  torch::Tensor losses = torch::empty({N}, torch::kFloat32);
  torch::Tensor logits = torch::empty({chunk_rows(N, V, x.element_size()), V}, x.options());
  Result r;
  torch::Tensor dlogits;  // (N, V): every chunk's gradient, for the one product that makes dW at the end
  if (grad) {
    dlogits = torch::empty({N, V}, x.options());
    r.dx = torch::empty_like(x);
  }
  const float scale = static_cast<float>(weight / static_cast<double>(N));
  chunk_loop(x, wp, t.data_ptr<int64_t>(), scale, losses.data_ptr<float>(), logits, dlogits, r.dx, product_out);
  if (grad) {  // (V, C)
    r.dw = widen ? torch::empty_like(w) : torch::mm(dlogits.t(), x).to(torch::kFloat32);
    if (widen) widened_mm_out(r.dw, dlogits.t(), x);
  }
  r.loss = mean_row_loss(losses, weight);
  return r;
}

struct HeadCrossEntropy : public torch::autograd::Function<HeadCrossEntropy> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w,
                               const torch::Tensor& targets, double weight) {
    Result r = head_loss_pass(x, w, targets, weight, true);
    ctx->save_for_backward({r.dx, r.dw});
    return r.loss;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_output) {
    const auto saved = ctx->get_saved_variables();
    torch::Tensor dx = saved[0], dw = saved[1];
    const torch::Tensor& g = grad_output[0];
    if (!(g.numel() == 1 && g.item<double>() == 1.0)) {
      dx = dx * g.to(dx.scalar_type());
      dw = dw * g.to(dw.scalar_type());
    }
    return {dx, dw, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor head_cross_entropy(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& targets,
                                 double weight) {
  TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1),
              "head_cross_entropy: expected (N, C) x and (V, C) W, got ", x.sizes(), " and ", w.sizes());
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == x.size(0), "head_cross_entropy: expected (", x.size(0),
              ",) targets, got ", targets.sizes());
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 || x.scalar_type() == torch::kBFloat16,
              "head_cross_entropy: x must be float32 or bfloat16, got ", x.scalar_type());
  TORCH_CHECK(w.scalar_type() == torch::kFloat32, "head_cross_entropy: W must be float32, got ", w.scalar_type());
  TORCH_CHECK(x.device().is_cpu() && w.device().is_cpu(), "head_cross_entropy: CPU only");
  const torch::Tensor xc = x.contiguous();
  if (torch::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad()))
    return HeadCrossEntropy::apply(xc, w, targets, weight);
  return head_loss_pass(xc, w, targets, weight, false).loss;
}

torch::Tensor head_cross_entropy_out(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& targets,
                                     double weight, torch::Tensor& dx, torch::Tensor* dw, HeadLossScratch& scratch) {
  RECORD_FUNCTION("poslab::head_cross_entropy", std::vector<c10::IValue>());
  const auto dtype = x.scalar_type();
  TORCH_CHECK((dtype == torch::kFloat32 || dtype == torch::kBFloat16) && w.scalar_type() == torch::kFloat32 &&
                  x.is_contiguous() && dx.scalar_type() == dtype,
              "head_cross_entropy_out: contiguous float32 or bfloat16 x (and dx of its dtype), float32 W expected");
  const int64_t N = x.size(0), V = w.size(0);
  const int64_t rows = chunk_rows(N, V, x.element_size());
  const auto opts = x.options();
  if (!scratch.logits.defined() || scratch.logits.size(0) != rows || scratch.dlogits.size(0) != N ||
      scratch.logits.size(1) != V || scratch.logits.scalar_type() != dtype) {
    scratch.logits = torch::empty({rows, V}, opts);
    scratch.dlogits = torch::empty({N, V}, opts);
    scratch.losses = torch::empty({N});
    scratch.w = dtype == torch::kFloat32 ? torch::Tensor() : torch::empty(w.sizes(), opts);
    scratch.dw = dtype == torch::kFloat32 ? torch::Tensor() : torch::empty(w.sizes(), opts);
  }
  if (dtype == torch::kBFloat16) scratch.w.copy_(w);  // the bf16 copy autocast would make
  const torch::Tensor& wp = dtype == torch::kFloat32 ? w : scratch.w;
  const torch::Tensor t = checked_targets(targets, V, "head_cross_entropy");
  const float scale = static_cast<float>(weight / static_cast<double>(N));
  const auto product_out = [](torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b) {
    at::mm_out(out, a, b);
  };
  chunk_loop(x, wp, t.data_ptr<int64_t>(), scale, scratch.losses.data_ptr<float>(), scratch.logits, scratch.dlogits, dx,
             product_out);
  if (dw != nullptr && dtype == torch::kFloat32) at::mm_out(*dw, scratch.dlogits.t(), x);
  if (dw != nullptr && dtype == torch::kBFloat16) dw->copy_(at::mm_out(scratch.dw, scratch.dlogits.t(), x));
  return mean_row_loss(scratch.losses, weight);
}

}  // namespace poslab
