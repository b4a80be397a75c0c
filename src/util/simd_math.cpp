#include "util/simd_math.h"

namespace poslab::simd {

POSLAB_SIMD_TARGETS void widen_bf16(const uint16_t* in, float* out, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) out[j] = bf16_to_float(in[j]);
}

POSLAB_SIMD_TARGETS void narrow_bf16(const float* in, uint16_t* out, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) out[j] = float_to_bf16(in[j]);
}

POSLAB_SIMD_TARGETS void add_widened_bf16(const float* x, const uint16_t* y, float* out, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) out[j] = x[j] + bf16_to_float(y[j]);
}

}  // namespace poslab::simd
