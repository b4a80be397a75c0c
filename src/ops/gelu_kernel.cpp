#include "ops/gelu_kernel.h"

#include <algorithm>
#include <vector>

#include "util/simd_math.h"

namespace poslab {
namespace {

using simd::exp_np;

// Abramowitz & Stegun 7.1.26: erf(x) = 1 - t (a1 + t (a2 + ...)) e^{-x^2}, t = 1 / (1 + p x), x >= 0,
// absolute error <= 1.5e-7; odd in x. `e` is exp(-x^2) (the GELU gradient needs it too). Branch-free, so loops
// over it vectorise.
inline float erf_with_exp(float x, float e) {
  const float a = x < 0.0f ? -x : x;
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  float q = 1.061405429f;
  q = q * t - 1.453152027f;
  q = q * t + 1.421413741f;
  q = q * t - 0.284496736f;
  q = q * t + 0.254829592f;
  const float y = 1.0f - q * t * e;
  return x < 0.0f ? -y : y;
}

inline float erf_inline(float x) { return erf_with_exp(x, exp_np(-x * x)); }

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

// In blocks: bf16 -> float, the float math, float -> bf16, each its own loop (GCC does not vectorise one loop that
// mixes the 16-bit loads and stores with the float and int32 math of erf).
constexpr int64_t kBlock = 512;

POSLAB_SIMD_TARGETS void gelu_block(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) y[j] = 0.5f * x[j] * (1.0f + erf_inline(x[j] * kInvSqrt2));
}

POSLAB_SIMD_TARGETS void gelu_backward_block(const float* x, const float* dy, float* dx, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    const float e = exp_np(-0.5f * x[j] * x[j]);  // exp(-(x / sqrt 2)^2), for erf and the density
    const float cdf = 0.5f * (1.0f + erf_with_exp(x[j] * kInvSqrt2, e));
    const float pdf = kInvSqrt2Pi * e;
    dx[j] = dy[j] * (cdf + x[j] * pdf);
  }
}

POSLAB_SIMD_TARGETS void add_bias(float* x, const float* b, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) x[j] += b[j];
}

POSLAB_SIMD_TARGETS void accumulate(float* into, const float* x, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) into[j] += x[j];
}

// A bf16 input has only 2^16 values: the GELU of each (rounded to bf16) and its derivative (float) are tabulated
// once, by the same float formulas, and the kernels look them up. The results are the formulas' bits: y is the
// formula's float rounded once; dx = dy * gelu'(x) is the same float product the formula forms, rounded once.
struct GeluTables {
  std::vector<int32_t> y;   // y[x's bits] = bf16 bits of gelu(x) (32-bit entries: vector gathers read 32 bits)
  std::vector<float> grad;  // grad[x's bits] = gelu'(x) = Phi(x) + x phi(x)
};

const GeluTables& tables() {
  static const GeluTables t = [] {
    constexpr int64_t kValues = 1 << 16;
    GeluTables g{std::vector<int32_t>(kValues), std::vector<float>(kValues)};
    alignas(64) float xf[kBlock], yf[kBlock], ones[kBlock];
    alignas(64) uint16_t yb[kBlock];
    std::fill(ones, ones + kBlock, 1.0f);
    for (int64_t b = 0; b < kValues; b += kBlock) {
      for (int64_t j = 0; j < kBlock; ++j) xf[j] = simd::bf16_to_float(static_cast<uint16_t>(b + j));
      gelu_block(xf, yf, kBlock);
      simd::narrow_bf16(yf, yb, kBlock);
      std::copy(yb, yb + kBlock, g.y.data() + b);
      gelu_backward_block(xf, ones, g.grad.data() + b, kBlock);
    }
    return g;
  }();
  return t;
}

POSLAB_SIMD_TARGETS void look_up(const uint16_t* x, const int32_t* table, uint16_t* y, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) y[j] = static_cast<uint16_t>(table[x[j]]);
}

POSLAB_SIMD_TARGETS void scale_by_grad(const uint16_t* x, const float* dy, const float* grad, float* dx, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) dx[j] = dy[j] * grad[x[j]];
}

}  // namespace

float erf_approx(float x) { return erf_inline(x); }

void gelu_bf16(const uint16_t* x, uint16_t* y, int64_t n) { look_up(x, tables().y.data(), y, n); }

void gelu_backward_bf16(const uint16_t* x, const uint16_t* dy, uint16_t* dx, int64_t n) {
  const float* grad = tables().grad.data();
  alignas(64) float dyf[kBlock], dxf[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    simd::widen_bf16(dy + b, dyf, m);
    scale_by_grad(x + b, dyf, grad, dxf, m);
    simd::narrow_bf16(dxf, dx + b, m);
  }
}

void bias_gelu_rows_bf16(const uint16_t* x, const float* b, uint16_t* y, int64_t begin, int64_t end, int64_t C) {
  alignas(64) float xf[kBlock], yf[kBlock];
  for (int64_t r = begin; r < end; ++r) {
    for (int64_t c = 0; c < C; c += kBlock) {
      const int64_t m = std::min(kBlock, C - c), o = r * C + c;
      simd::widen_bf16(x + o, xf, m);
      add_bias(xf, b + c, m);
      gelu_block(xf, yf, m);
      simd::narrow_bf16(yf, y + o, m);
    }
  }
}

void bias_gelu_backward_rows_bf16(const uint16_t* x, const float* b, const uint16_t* dy, uint16_t* dx, float* db,
                                  int64_t begin, int64_t end, int64_t C) {
  alignas(64) float xf[kBlock], dyf[kBlock], dxf[kBlock];
  for (int64_t r = begin; r < end; ++r) {
    for (int64_t c = 0; c < C; c += kBlock) {
      const int64_t m = std::min(kBlock, C - c), o = r * C + c;
      simd::widen_bf16(x + o, xf, m);
      add_bias(xf, b + c, m);
      simd::widen_bf16(dy + o, dyf, m);
      gelu_backward_block(xf, dyf, dxf, m);
      accumulate(db + c, dxf, m);
      simd::narrow_bf16(dxf, dx + o, m);
    }
  }
}

}  // namespace poslab
