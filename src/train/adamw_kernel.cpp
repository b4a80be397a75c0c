#include "train/adamw_kernel.h"

#include <cmath>

#include "util/simd_math.h"

namespace poslab {

POSLAB_SIMD_TARGETS double sum_of_squares(const float* x, int64_t n) {
  double total = 0;
  constexpr int64_t kBlock = 4096;  // float partial sums per block, added in double: exact enough, vectorised
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = b + kBlock < n ? b + kBlock : n;
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t i = b; i < e; ++i) s += x[i] * x[i];
    total += s;
  }
  return total;
}

POSLAB_SIMD_TARGETS void adamw_update(float* p, const float* grad, float* m, float* v, int64_t n,
                                      const AdamWScalars& s) {
  const float one_minus_b1 = 1.0f - s.beta1, one_minus_b2 = 1.0f - s.beta2;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i] * s.grad_scale;
    const float mi = m[i] * s.beta1 + g * one_minus_b1;
    const float vi = v[i] * s.beta2 + g * g * one_minus_b2;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * s.decay - s.step_size * (mi / (std::sqrt(vi) / s.sqrt_bc2 + s.eps));
  }
}

}  // namespace poslab
