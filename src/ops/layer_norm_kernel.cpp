#include "ops/layer_norm_kernel.h"

#include <cmath>
#include <vector>

#include "util/simd_math.h"

namespace poslab {
namespace {

POSLAB_SIMD_TARGETS void norm_row(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
                                  int64_t C, float eps) {
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int64_t j = 0; j < C; ++j) s += x[j];
  const float m = s / static_cast<float>(C);
  float v = 0.0f;
#pragma omp simd reduction(+ : v)
  for (int64_t j = 0; j < C; ++j) v += (x[j] - m) * (x[j] - m);
  const float r = 1.0f / std::sqrt(v / static_cast<float>(C) + eps);
  if (b != nullptr) {
#pragma omp simd
    for (int64_t j = 0; j < C; ++j) y[j] = (x[j] - m) * r * w[j] + b[j];
  } else {
#pragma omp simd
    for (int64_t j = 0; j < C; ++j) y[j] = (x[j] - m) * r * w[j];
  }
  *mean = m;
  *rstd = r;
}

POSLAB_SIMD_TARGETS void norm_backward_row(const float* x, const float* w, float m, float r, const float* dy, float* dx,
                                           float* dw, float* db, int64_t C) {
  float a = 0.0f, c = 0.0f;  // mean of dy * w, mean of dy * w * xhat
#pragma omp simd reduction(+ : a, c)
  for (int64_t j = 0; j < C; ++j) {
    const float g = dy[j] * w[j];
    a += g;
    c += g * (x[j] - m) * r;
  }
  a /= static_cast<float>(C);
  c /= static_cast<float>(C);
#pragma omp simd
  for (int64_t j = 0; j < C; ++j) {
    const float xhat = (x[j] - m) * r;
    dx[j] = r * (dy[j] * w[j] - a - xhat * c);
    dw[j] += dy[j] * xhat;
  }
  if (db != nullptr) {
#pragma omp simd
    for (int64_t j = 0; j < C; ++j) db[j] += dy[j];
  }
}

}  // namespace

void layer_norm_rows(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd, int64_t begin,
                     int64_t end, int64_t C, float eps) {
  for (int64_t i = begin; i < end; ++i) norm_row(x + i * C, w, b, y + i * C, mean + i, rstd + i, C, eps);
}

void layer_norm_rows_bf16(const float* x, const float* w, const float* b, uint16_t* y, float* mean, float* rstd,
                          int64_t begin, int64_t end, int64_t C, float eps) {
  thread_local std::vector<float> row;
  row.resize(static_cast<size_t>(C));
  for (int64_t i = begin; i < end; ++i) {
    norm_row(x + i * C, w, b, row.data(), mean + i, rstd + i, C, eps);
    simd::narrow_bf16(row.data(), y + i * C, C);
  }
}

void layer_norm_backward_rows(const float* x, const float* w, const float* mean, const float* rstd, const float* dy,
                              float* dx, float* dw, float* db, int64_t begin, int64_t end, int64_t C) {
  for (int64_t i = begin; i < end; ++i)
    norm_backward_row(x + i * C, w, mean[i], rstd[i], dy + i * C, dx + i * C, dw, db, C);
}

void layer_norm_backward_rows_bf16(const float* x, const float* w, const float* mean, const float* rstd,
                                   const uint16_t* dy, float* dx, float* dw, float* db, int64_t begin, int64_t end,
                                   int64_t C) {
  thread_local std::vector<float> row;
  row.resize(static_cast<size_t>(C));
  for (int64_t i = begin; i < end; ++i) {
    simd::widen_bf16(dy + i * C, row.data(), C);
    norm_backward_row(x + i * C, w, mean[i], rstd[i], row.data(), dx + i * C, dw, db, C);
  }
}

}  // namespace poslab
