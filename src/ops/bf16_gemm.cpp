#include "ops/bf16_gemm.h"

#include <stdexcept>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "util/simd_math.h"

namespace poslab {
namespace {

// The pair's two bf16 values as floats.
float hi(uint32_t pair) { return simd::bf16_to_float(static_cast<uint16_t>(pair >> 16)); }
float lo(uint32_t pair) { return simd::bf16_to_float(static_cast<uint16_t>(pair & 0xFFFFu)); }

void gemm_emulated(int64_t m, int64_t n, int64_t p0, int64_t p1, const bf16_pair* a, int64_t a_row, int64_t a_pair,
                   const bf16_pair* b, int64_t ldb, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) ci[j] = 0.0f;
    for (int64_t p = p0; p < p1; ++p) {
      const uint32_t av = a[i * a_row + p * a_pair];
      const float ah = hi(av), al = lo(av);
      const bf16_pair* bp = b + p * ldb;
      for (int64_t j = 0; j < n; ++j) {
        const float s = ci[j] + ah * hi(bp[j]);  // each product is exact in float: one rounding per sum
        ci[j] = s + al * lo(bp[j]);
      }
    }
  }
}

#if defined(__x86_64__)
#define POSLAB_BF16_TARGET __attribute__((target("avx512f,avx512bf16")))

// MR rows x 16 NV columns of C, sums in registers over the pairs.
template <int MR, int NV>
POSLAB_BF16_TARGET void tile_native(int64_t p0, int64_t p1, const bf16_pair* a, int64_t a_row, int64_t a_pair,
                                    const bf16_pair* b, int64_t ldb, float* c, int64_t ldc) {
  __m512 acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
  for (int64_t p = p0; p < p1; ++p) {
    __m512bh bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = (__m512bh)_mm512_loadu_si512(b + p * ldb + 16 * v);
    const bf16_pair* ap = a + p * a_pair;
    for (int i = 0; i < MR; ++i) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(ap[i * a_row]));
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], av, bv[v]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(c + i * ldc + 16 * v, acc[i][v]);
}

template <int NV>
POSLAB_BF16_TARGET void rows_native(int64_t mr, int64_t p0, int64_t p1, const bf16_pair* a, int64_t a_row,
                                    int64_t a_pair, const bf16_pair* b, int64_t ldb, float* c, int64_t ldc) {
  switch (mr) {
    case 8:
      return tile_native<8, NV>(p0, p1, a, a_row, a_pair, b, ldb, c, ldc);
    case 7:
      return tile_native<7, NV>(p0, p1, a, a_row, a_pair, b, ldb, c, ldc);
    case 6:
      return tile_native<6, NV>(p0, p1, a, a_row, a_pair, b, ldb, c, ldc);
    case 5:
      return tile_native<5, NV>(p0, p1, a, a_row, a_pair, b, ldb, c, ldc);
    case 4:
      return tile_native<4, NV>(p0, p1, a, a_row, a_pair, b, ldb, c, ldc);
    case 3:
      return tile_native<3, NV>(p0, p1, a, a_row, a_pair, b, ldb, c, ldc);
    case 2:
      return tile_native<2, NV>(p0, p1, a, a_row, a_pair, b, ldb, c, ldc);
    default:
      return tile_native<1, NV>(p0, p1, a, a_row, a_pair, b, ldb, c, ldc);
  }
}

void gemm_native(int64_t m, int64_t n, int64_t p0, int64_t p1, const bf16_pair* a, int64_t a_row, int64_t a_pair,
                 const bf16_pair* b, int64_t ldb, float* c, int64_t ldc) {
  constexpr int64_t kRows = 8;
  for (int64_t j = 0; j < n;) {
    const int64_t nv = n - j >= 32 ? 2 : 1;
    for (int64_t i = 0; i < m; i += kRows) {
      const int64_t mr = m - i < kRows ? m - i : kRows;
      if (nv == 2)
        rows_native<2>(mr, p0, p1, a + i * a_row, a_row, a_pair, b + j, ldb, c + i * ldc + j, ldc);
      else
        rows_native<1>(mr, p0, p1, a + i * a_row, a_row, a_pair, b + j, ldb, c + i * ldc + j, ldc);
    }
    j += 16 * nv;
  }
}
#endif

bool detect() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

Bf16Dot& mode() {
  static Bf16Dot m = cpu_has_bf16_dot() ? Bf16Dot::kNative : Bf16Dot::kEmulated;
  return m;
}

}  // namespace

bool cpu_has_bf16_dot() {
  static const bool has = detect();
  return has;
}

Bf16Dot bf16_dot() { return mode(); }

void set_bf16_dot(Bf16Dot d) {
  if (d == Bf16Dot::kNative && !cpu_has_bf16_dot())
    throw std::invalid_argument("set_bf16_dot: this CPU has no AVX512-BF16 (VDPBF16PS)");
  mode() = d;
}

void bf16_gemm(int64_t m, int64_t n, int64_t p0, int64_t p1, const bf16_pair* a, int64_t a_row, int64_t a_pair,
               const bf16_pair* b, int64_t ldb, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
#if defined(__x86_64__)
  if (mode() == Bf16Dot::kNative) return gemm_native(m, n, p0, p1, a, a_row, a_pair, b, ldb, c, ldc);
#endif
  gemm_emulated(m, n, p0, p1, a, a_row, a_pair, b, ldb, c, ldc);
}

void pack_row_pairs(const uint16_t* x, int64_t ld, int64_t rows, int64_t cols, bf16_pair* out, int64_t ldo) {
  for (int64_t p = 0; 2 * p < rows; ++p) {
    const uint16_t* r0 = x + 2 * p * ld;
    const uint16_t* r1 = 2 * p + 1 < rows ? r0 + ld : nullptr;
    bf16_pair* o = out + p * ldo;
    for (int64_t j = 0; j < cols; ++j) o[j] = r0[j] | (r1 ? static_cast<uint32_t>(r1[j]) << 16 : 0u);
  }
}

void pack_col_pairs_t(const uint16_t* x, int64_t ld, int64_t rows, int64_t cols, bf16_pair* out, int64_t ldo) {
  for (int64_t j = 0; j < rows; ++j) {
    const uint16_t* r = x + j * ld;
    for (int64_t p = 0; 2 * p < cols; ++p) out[p * ldo + j] = r[2 * p] | static_cast<uint32_t>(r[2 * p + 1]) << 16;
  }
}

}  // namespace poslab
