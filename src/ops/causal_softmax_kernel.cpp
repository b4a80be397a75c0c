#include "ops/causal_softmax_kernel.h"

#include <cstring>
#include <limits>
#include <vector>

#include "util/simd_math.h"

namespace poslab {
namespace {

using simd::exp_np;

// Rows are short (query i sees i + 1 keys), so each loop runs over whole vectors of 16 floats, the entries past
// the last key being -inf (forward) or zero probabilities (backward), rather than ending in a scalar remainder:
// that remainder cost more than the vectors (measured: 1.6 ms per 64 x 128 x 128 bf16 forward before, ~0.6 after).
constexpr int64_t kLanes = 16;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The length processed for a row of n keys out of T: n rounded up to whole vectors while that stays inside the row.
inline int64_t span(int64_t n, int64_t T) {
  const int64_t m = (n + kLanes - 1) / kLanes * kLanes;
  return m <= T ? m : n;
}

// y = softmax(scale * x) over m entries (x past the last key is -inf: exp gives ~1e-38, zeroed by the caller).
POSLAB_SIMD_TARGETS void softmax_span(const float* x, float* y, int64_t m, float scale) {
  float mx = kNegInf;
#pragma omp simd reduction(max : mx)
  for (int64_t j = 0; j < m; ++j) mx = x[j] * scale > mx ? x[j] * scale : mx;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < m; ++j) {
    y[j] = exp_np(x[j] * scale - mx);
    sum += y[j];
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (int64_t j = 0; j < m; ++j) y[j] *= inv;
}

// ds = scale * p * (dp - <p, dp>) over m entries (p is zero past the last key, so those ds are zero).
POSLAB_SIMD_TARGETS void softmax_backward_span(const float* p, const float* dp, float* ds, int64_t m, float scale) {
  float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
  for (int64_t j = 0; j < m; ++j) dot += dp[j] * p[j];
#pragma omp simd
  for (int64_t j = 0; j < m; ++j) ds[j] = scale * p[j] * (dp[j] - dot);
}

void fill_neg_inf(float* x, int64_t from, int64_t to) {
  for (int64_t j = from; j < to; ++j) x[j] = kNegInf;
}

}  // namespace

void causal_softmax_rows(const float* s, float* out, int64_t begin, int64_t end, int64_t T, float scale) {
  thread_local std::vector<float> x;
  x.resize(static_cast<size_t>(T));
  for (int64_t r = begin; r < end; ++r) {
    const int64_t n = r % T + 1, m = span(n, T);
    std::memcpy(x.data(), s + r * T, static_cast<size_t>(n) * sizeof(float));
    fill_neg_inf(x.data(), n, m);
    float* y = out + r * T;
    softmax_span(x.data(), y, m, scale);
    std::memset(y + n, 0, static_cast<size_t>(T - n) * sizeof(float));
  }
}

void causal_softmax_rows_bf16(const uint16_t* s, uint16_t* out, int64_t begin, int64_t end, int64_t T, float scale) {
  thread_local std::vector<float> x, y;
  x.resize(static_cast<size_t>(T));
  y.resize(static_cast<size_t>(T));
  for (int64_t r = begin; r < end; ++r) {
    const int64_t n = r % T + 1, m = span(n, T);
    simd::widen_bf16(s + r * T, x.data(), m);  // m <= T: still inside the row
    fill_neg_inf(x.data(), n, m);
    softmax_span(x.data(), y.data(), m, scale);
    std::memset(y.data() + n, 0, static_cast<size_t>(m - n) * sizeof(float));
    simd::narrow_bf16(y.data(), out + r * T, m);
    std::memset(out + r * T + m, 0, static_cast<size_t>(T - m) * sizeof(uint16_t));  // bf16 zero: all bits 0
  }
}

void causal_softmax_backward_rows(const float* p, const float* dp, float* ds, int64_t begin, int64_t end, int64_t T,
                                  float scale) {
  for (int64_t r = begin; r < end; ++r) {
    const int64_t n = r % T + 1, m = span(n, T);
    softmax_backward_span(p + r * T, dp + r * T, ds + r * T, m, scale);
    std::memset(ds + r * T + n, 0, static_cast<size_t>(T - n) * sizeof(float));  // exact zeros whatever dp holds
  }
}

void causal_softmax_backward_rows_bf16(const uint16_t* p, const uint16_t* dp, uint16_t* ds, int64_t begin, int64_t end,
                                       int64_t T, float scale) {
  thread_local std::vector<float> pf, dpf, dsf;
  pf.resize(static_cast<size_t>(T));
  dpf.resize(static_cast<size_t>(T));
  dsf.resize(static_cast<size_t>(T));
  for (int64_t r = begin; r < end; ++r) {
    const int64_t n = r % T + 1, m = span(n, T);
    simd::widen_bf16(p + r * T, pf.data(), m);
    simd::widen_bf16(dp + r * T, dpf.data(), m);
    std::memset(pf.data() + n, 0, static_cast<size_t>(m - n) * sizeof(float));  // a stored p past the keys is 0 anyway
    softmax_backward_span(pf.data(), dpf.data(), dsf.data(), m, scale);
    std::memset(dsf.data() + n, 0, static_cast<size_t>(m - n) * sizeof(float));
    simd::narrow_bf16(dsf.data(), ds + r * T, m);
    std::memset(ds + r * T + m, 0, static_cast<size_t>(T - m) * sizeof(uint16_t));
  }
}

}  // namespace poslab
