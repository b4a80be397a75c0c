// Branch-free float helpers for the vectorised kernels (no LibTorch): exp for softmax, bfloat16 conversions.
#pragma once

#include <cstdint>
#include <cstring>

namespace poslab::simd {

// exp(x) for x <= 0 (softmax after subtracting the row maximum), within 2 ulp of std::exp; ~0 below -87.
// exp(x) = 2^n * e^r, n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2] (ln 2 split in two for accuracy),
// e^r by its Taylor polynomial to r^7 (error < 3e-9 relative on that interval). No branches and no libm call,
// so that loops over it vectorise.
inline float exp_np(float x) {
  x = x < -87.0f ? -87.0f : x;
  // Round to nearest by adding and subtracting 1.5 * 2^23.
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (x - n * 0.693145751953125f) - n * 1.42860682030941723212e-6f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

inline float bf16_to_float(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline uint16_t float_to_bf16(float f) {  // round to nearest even, as c10::BFloat16 does (finite values)
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// Row conversions between bfloat16 bit patterns and float (vectorised; simd_math.cpp).
void widen_bf16(const uint16_t* in, float* out, int64_t n);
void narrow_bf16(const float* in, uint16_t* out, int64_t n);
// out = x + float(y) elementwise, y bfloat16 bit patterns.
void add_widened_bf16(const float* x, const uint16_t* y, float* out, int64_t n);

}  // namespace poslab::simd

// One clone of a function per instruction set, chosen when the program starts (x86-64); elsewhere one build for
// the compiler's own target.
#if defined(__x86_64__)
#define POSLAB_SIMD_TARGETS __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define POSLAB_SIMD_TARGETS
#endif
