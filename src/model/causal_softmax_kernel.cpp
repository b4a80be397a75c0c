#include "model/causal_softmax_kernel.h"

#include <vector>

#include "util/simd_math.h"

namespace poslab {
namespace {

using simd::exp_np;

// Softmax of scale * x[0..n) into y, in float; y[n..T) = 0.
POSLAB_SIMD_TARGETS void softmax_row(const float* x, float* y, int64_t n, int64_t T, float scale) {
  float m = x[0] * scale;
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < n; ++j) m = x[j] * scale > m ? x[j] * scale : m;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    y[j] = exp_np(x[j] * scale - m);
    sum += y[j];
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) y[j] *= inv;
  for (int64_t j = n; j < T; ++j) y[j] = 0.0f;
}

POSLAB_SIMD_TARGETS void softmax_backward_row(const float* p, const float* dp, float* ds, int64_t n, int64_t T,
                                              float scale) {
  float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
  for (int64_t j = 0; j < n; ++j) dot += dp[j] * p[j];
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) ds[j] = scale * p[j] * (dp[j] - dot);
  for (int64_t j = n; j < T; ++j) ds[j] = 0.0f;
}

}  // namespace

void causal_softmax_rows(const float* s, float* out, int64_t begin, int64_t end, int64_t T, float scale) {
  for (int64_t r = begin; r < end; ++r) softmax_row(s + r * T, out + r * T, r % T + 1, T, scale);
}

void causal_softmax_rows_bf16(const uint16_t* s, uint16_t* out, int64_t begin, int64_t end, int64_t T, float scale) {
  thread_local std::vector<float> x, y;
  x.resize(static_cast<size_t>(T));
  y.resize(static_cast<size_t>(T));
  for (int64_t r = begin; r < end; ++r) {
    const int64_t n = r % T + 1;
    simd::widen_bf16(s + r * T, x.data(), n);
    softmax_row(x.data(), y.data(), n, T, scale);
    simd::narrow_bf16(y.data(), out + r * T, T);
  }
}

void causal_softmax_backward_rows(const float* p, const float* dp, float* ds, int64_t begin, int64_t end, int64_t T,
                                  float scale) {
  for (int64_t r = begin; r < end; ++r) softmax_backward_row(p + r * T, dp + r * T, ds + r * T, r % T + 1, T, scale);
}

void causal_softmax_backward_rows_bf16(const uint16_t* p, const uint16_t* dp, uint16_t* ds, int64_t begin,
                                       int64_t end, int64_t T, float scale) {
  thread_local std::vector<float> pf, dpf, dsf;
  pf.resize(static_cast<size_t>(T));
  dpf.resize(static_cast<size_t>(T));
  dsf.resize(static_cast<size_t>(T));
  for (int64_t r = begin; r < end; ++r) {
    const int64_t n = r % T + 1;
    simd::widen_bf16(p + r * T, pf.data(), n);
    simd::widen_bf16(dp + r * T, dpf.data(), n);
    softmax_backward_row(pf.data(), dpf.data(), dsf.data(), n, T, scale);
    simd::narrow_bf16(dsf.data(), ds + r * T, T);
  }
}

}  // namespace poslab
