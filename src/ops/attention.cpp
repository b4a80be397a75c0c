#include "ops/attention.h"

#include <ATen/record_function.h>

#include <cmath>
#include <functional>
#include <vector>

#include "ops/attention_kernel.h"
#include "ops/bf16_bits.h"
#include "util/kernel_paths.h"
#include "util/parallel.h"
#include "util/simd_math.h"

namespace poslab {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

struct Shape {
  int64_t B, T, C, nh, hs;
  float scale;
};

Shape attention_shape(const torch::Tensor& qkv, int64_t n_head) {
  TORCH_CHECK(qkv.dim() == 3 && n_head > 0 && qkv.size(2) % (3 * n_head) == 0,
              "causal_attention: expected (B, T, 3C) with C a multiple of n_head = ", n_head, ", got ", qkv.sizes());
  TORCH_CHECK(qkv.scalar_type() == torch::kFloat32 || qkv.scalar_type() == torch::kBFloat16,
              "causal_attention: qkv must be float32 or bfloat16, got ", qkv.scalar_type());
  TORCH_CHECK(qkv.device().is_cpu(), "causal_attention: CPU only");
  const int64_t C = qkv.size(2) / 3, hs = C / n_head;
  return {qkv.size(0), qkv.size(1), C, n_head, hs, static_cast<float>(1.0 / std::sqrt(static_cast<double>(hs)))};
}

// rows x hs floats from bf16 rows with stride ld (a head's slice of each row).
void widen_rows(const uint16_t* src, int64_t ld, int64_t rows, int64_t hs, float* dst) {
  for (int64_t i = 0; i < rows; ++i) simd::widen_bf16(src + i * ld, dst + i * hs, hs);
}
void narrow_head_rows(const float* src, int64_t rows, int64_t hs, uint16_t* dst, int64_t ld) {
  for (int64_t i = 0; i < rows; ++i) simd::narrow_bf16(src + i * hs, dst + i * ld, hs);
}

// Per-thread float buffers of one task (reused: the sizes repeat from call to call).
std::vector<float>& buffer(int which, size_t n) {
  thread_local std::vector<float> bufs[8];
  bufs[which].resize(n);
  return bufs[which];
}

// The grain of parallel_for: one (sequence, head) per task.
void for_each_head(const Shape& s, const std::function<void(int64_t b, int64_t h)>& fn) {
  parallel_for(0, s.B * s.nh, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) fn(t / s.nh, t % s.nh);
  });
}

// bf16 products in bf16 (poslab's pair-product kernel, ops/bf16_gemm.h) unless bf16_products=float widens them,
// where the shape fits (attention_bf16_fits); else in float by the BLAS.
bool bf16_dot_products(const torch::Tensor& qkv, const Shape& s) {
  return qkv.scalar_type() == torch::kBFloat16 && kernel_paths().bf16_products != "float" &&
         attention_bf16_fits(s.T, s.hs);
}

// y and the softmax probabilities p (B * nh, T, T) float, kept for backward.
void forward_into(const torch::Tensor& qkv, const Shape& s, torch::Tensor& y, torch::Tensor& p) {
  RECORD_FUNCTION("poslab::causal_attention", std::vector<c10::IValue>());
  const int64_t T = s.T, hs = s.hs, ld = 3 * s.C;
  float* pp = p.data_ptr<float>();
  const bool bf16 = qkv.scalar_type() == torch::kBFloat16, dot = bf16_dot_products(qkv, s);
  for_each_head(s, [&](int64_t b, int64_t h) {
    float* ph = pp + (b * s.nh + h) * T * T;
    if (dot) {
      const uint16_t* base = bf16_bits(qkv) + b * T * ld + h * hs;
      attention_head_forward_bf16(base, base + s.C, base + 2 * s.C, ld, T, hs, s.scale, ph,
                                  bf16_bits(y) + b * T * s.C + h * hs, s.C);
      return;
    }
    float* scores = buffer(0, static_cast<size_t>(T * T)).data();
    if (!bf16) {
      const float* base = qkv.data_ptr<float>() + b * T * ld + h * hs;
      attention_head_forward(base, base + s.C, base + 2 * s.C, ld, T, hs, s.scale, scores, ph,
                             y.data_ptr<float>() + b * T * s.C + h * hs, s.C);
      return;
    }
    const uint16_t* base = bf16_bits(qkv) + b * T * ld + h * hs;
    float* q = buffer(1, static_cast<size_t>(3 * T * hs)).data();
    float *k = q + T * hs, *v = k + T * hs;
    float* o = buffer(2, static_cast<size_t>(T * hs)).data();
    widen_rows(base, ld, T, hs, q);
    widen_rows(base + s.C, ld, T, hs, k);
    widen_rows(base + 2 * s.C, ld, T, hs, v);
    attention_head_forward(q, k, v, hs, T, hs, s.scale, scores, ph, o, hs);
    narrow_head_rows(o, T, hs, bf16_bits(y) + b * T * s.C + h * hs, s.C);
  });
}

std::pair<torch::Tensor, torch::Tensor> attention_forward(const torch::Tensor& qkv, const Shape& s) {
  torch::Tensor y = torch::empty({s.B, s.T, s.C}, qkv.options());
  torch::Tensor p = torch::empty({s.B * s.nh, s.T, s.T}, qkv.options().dtype(torch::kFloat32));
  forward_into(qkv, s, y, p);
  return {y, p};
}

// dy: contiguous, in qkv's dtype.
void backward_into(const torch::Tensor& qkv, const torch::Tensor& p, const torch::Tensor& dy, const Shape& s,
                   torch::Tensor& dqkv) {
  RECORD_FUNCTION("poslab::causal_attention_backward", std::vector<c10::IValue>());
  const int64_t T = s.T, hs = s.hs, ld = 3 * s.C;
  const float* pp = p.data_ptr<float>();
  const bool bf16 = qkv.scalar_type() == torch::kBFloat16, dot = bf16_dot_products(qkv, s);
  for_each_head(s, [&](int64_t b, int64_t h) {
    const float* ph = pp + (b * s.nh + h) * T * T;
    if (dot) {
      const uint16_t* base = bf16_bits(qkv) + b * T * ld + h * hs;
      uint16_t* grad = bf16_bits(dqkv) + b * T * ld + h * hs;
      attention_head_backward_bf16(base, base + s.C, base + 2 * s.C, ld, ph, bf16_bits(dy) + b * T * s.C + h * hs, s.C,
                                   T, hs, s.scale, grad, grad + s.C, grad + 2 * s.C, ld);
      return;
    }
    float* scratch = buffer(0, static_cast<size_t>(T * T)).data();
    if (!bf16) {
      const float* base = qkv.data_ptr<float>() + b * T * ld + h * hs;
      float* grad = dqkv.data_ptr<float>() + b * T * ld + h * hs;
      attention_head_backward(base, base + s.C, base + 2 * s.C, ld, ph, dy.data_ptr<float>() + b * T * s.C + h * hs,
                              s.C, T, hs, s.scale, scratch, grad, grad + s.C, grad + 2 * s.C, ld);
      return;
    }
    const uint16_t* base = bf16_bits(qkv) + b * T * ld + h * hs;
    float* q = buffer(1, static_cast<size_t>(3 * T * hs)).data();
    float *k = q + T * hs, *v = k + T * hs;
    float* d_o = buffer(2, static_cast<size_t>(T * hs)).data();
    float* dq = buffer(3, static_cast<size_t>(3 * T * hs)).data();
    float *dk = dq + T * hs, *dv = dk + T * hs;
    widen_rows(base, ld, T, hs, q);
    widen_rows(base + s.C, ld, T, hs, k);
    widen_rows(base + 2 * s.C, ld, T, hs, v);
    widen_rows(bf16_bits(dy) + b * T * s.C + h * hs, s.C, T, hs, d_o);
    attention_head_backward(q, k, v, hs, ph, d_o, hs, T, hs, s.scale, scratch, dq, dk, dv, hs);
    uint16_t* grad = bf16_bits(dqkv) + b * T * ld + h * hs;
    narrow_head_rows(dq, T, hs, grad, ld);
    narrow_head_rows(dk, T, hs, grad + s.C, ld);
    narrow_head_rows(dv, T, hs, grad + 2 * s.C, ld);
  });
}

torch::Tensor backward_impl(const torch::Tensor& qkv, const torch::Tensor& p, const torch::Tensor& dy_in,
                            const Shape& s) {
  const torch::Tensor dy = dy_in.to(qkv.scalar_type()).contiguous();
  torch::Tensor dqkv = torch::empty_like(qkv);
  backward_into(qkv, p, dy, s, dqkv);
  return dqkv;
}

struct CausalAttention : public torch::autograd::Function<CausalAttention> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& qkv, int64_t n_head) {
    const Shape s = attention_shape(qkv, n_head);
    auto [y, p] = attention_forward(qkv, s);
    ctx->save_for_backward({qkv, p});
    ctx->saved_data["n_head"] = n_head;
    return y;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_output) {
    const auto saved = ctx->get_saved_variables();
    const Shape s = attention_shape(saved[0], ctx->saved_data["n_head"].toInt());
    return {backward_impl(saved[0], saved[1], grad_output[0], s), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor causal_attention(const torch::Tensor& qkv, int64_t n_head) {
  const Shape s = attention_shape(qkv, n_head);
  const torch::Tensor x = qkv.contiguous();
  if (torch::GradMode::is_enabled() && qkv.requires_grad()) return CausalAttention::apply(x, n_head);
  return attention_forward(x, s).first;
}

void causal_attention_forward_out(const torch::Tensor& qkv, int64_t n_head, torch::Tensor& y, torch::Tensor& p) {
  forward_into(qkv, attention_shape(qkv, n_head), y, p);
}

void causal_attention_backward_out(const torch::Tensor& qkv, const torch::Tensor& p, const torch::Tensor& dy,
                                   int64_t n_head, torch::Tensor& dqkv) {
  backward_into(qkv, p, dy, attention_shape(qkv, n_head), dqkv);
}

}  // namespace poslab
