// The bf16 pair products of the attention kernel (ops/bf16_gemm.h): known answers in every operand layout, block
// size and pair range, in the emulation and in AVX512-BF16's instruction (where the CPU has it: the same bits), and
// the packing of bf16 rows into pairs. No LibTorch: plain arrays.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "ops/bf16_gemm.h"
#include "util/simd_math.h"

namespace poslab {
namespace {

uint32_t pair_of(float lo, float hi) {
  return simd::float_to_bf16(lo) | static_cast<uint32_t>(simd::float_to_bf16(hi)) << 16;
}
float lo_of(uint32_t p) { return simd::bf16_to_float(static_cast<uint16_t>(p & 0xFFFFu)); }
float hi_of(uint32_t p) { return simd::bf16_to_float(static_cast<uint16_t>(p >> 16)); }

// Restores the dot mode on leaving the scope.
class DotGuard {
 public:
  explicit DotGuard(Bf16Dot d) : saved_(bf16_dot()) { set_bf16_dot(d); }
  ~DotGuard() { set_bf16_dot(saved_); }

 private:
  Bf16Dot saved_;
};

std::vector<Bf16Dot> modes() {
  std::vector<Bf16Dot> m{Bf16Dot::kEmulated};
  if (cpu_has_bf16_dot()) m.push_back(Bf16Dot::kNative);
  return m;
}

TEST(Bf16Gemm, KnownAnswersInEveryLayoutBlockAndPairRange) {
  // Small integers: every product and sum is exact, in bf16 and in float.
  std::mt19937 gen(5);
  std::uniform_int_distribution<int> small(-4, 4);
  for (const Bf16Dot mode : modes()) {
    DotGuard guard(mode);
    for (const int64_t m : {1, 5, 8, 9, 17})
      for (const int64_t n : {16, 32, 48}) {
        const int64_t pairs = 7, p0 = 2, p1 = 6;
        // A stored both ways: rows of pairs (a_row = pairs + 1, a_pair 1) and pairs of rows (a_row 1, a_pair m + 3)
        std::vector<uint32_t> a_rows(static_cast<size_t>(m * (pairs + 1))),
            a_cols(static_cast<size_t>(pairs * (m + 3)));
        std::vector<uint32_t> b(static_cast<size_t>(pairs * (n + 16)));
        for (int64_t i = 0; i < m; ++i)
          for (int64_t p = 0; p < pairs; ++p) {
            const uint32_t v = pair_of(static_cast<float>(small(gen)), static_cast<float>(small(gen)));
            a_rows[i * (pairs + 1) + p] = a_cols[p * (m + 3) + i] = v;
          }
        for (auto& v : b) v = pair_of(static_cast<float>(small(gen)), static_cast<float>(small(gen)));
        std::vector<float> want(static_cast<size_t>(m * n));
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            for (int64_t p = p0; p < p1; ++p) {
              const uint32_t x = a_rows[i * (pairs + 1) + p], y = b[p * (n + 16) + j];
              want[i * n + j] += lo_of(x) * lo_of(y) + hi_of(x) * hi_of(y);
            }
        for (const bool transposed : {false, true}) {
          std::vector<float> c(static_cast<size_t>(m * (n + 5)), 99.0f);  // row stride n + 5: past n untouched
          if (transposed)
            bf16_gemm(m, n, p0, p1, a_cols.data(), 1, m + 3, b.data(), n + 16, c.data(), n + 5);
          else
            bf16_gemm(m, n, p0, p1, a_rows.data(), pairs + 1, 1, b.data(), n + 16, c.data(), n + 5);
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j)
              ASSERT_EQ(c[i * (n + 5) + j], want[i * n + j])
                  << "m " << m << " n " << n << " transposed " << transposed << " at " << i << "," << j;
            for (int64_t j = n; j < n + 5; ++j) ASSERT_EQ(c[i * (n + 5) + j], 99.0f);
          }
        }
      }
  }
}

TEST(Bf16Gemm, TheInstructionAndItsEmulationGiveTheSameBits) {
  if (!cpu_has_bf16_dot()) GTEST_SKIP() << "this CPU has no AVX512-BF16: only the emulation runs here";
  std::mt19937 gen(9);
  std::normal_distribution<float> normal;
  const int64_t m = 29, n = 80, pairs = 45;
  std::vector<uint32_t> a(static_cast<size_t>(m * pairs)), b(static_cast<size_t>(pairs * n));
  for (auto& v : a) v = pair_of(normal(gen), normal(gen));
  for (auto& v : b) v = pair_of(normal(gen), 1e-3f * normal(gen));  // sums of mixed magnitudes: rounding shows
  std::vector<float> native(static_cast<size_t>(m * n)), emulated(native.size());
  {
    DotGuard g(Bf16Dot::kNative);
    bf16_gemm(m, n, 0, pairs, a.data(), pairs, 1, b.data(), n, native.data(), n);
  }
  {
    DotGuard g(Bf16Dot::kEmulated);
    bf16_gemm(m, n, 0, pairs, a.data(), pairs, 1, b.data(), n, emulated.data(), n);
  }
  EXPECT_EQ(std::memcmp(native.data(), emulated.data(), native.size() * sizeof(float)), 0);
}

TEST(Bf16Gemm, ForcingTheInstructionWhereTheCpuLacksItIsAnError) {
  if (cpu_has_bf16_dot()) {
    DotGuard g(Bf16Dot::kNative);
    EXPECT_EQ(bf16_dot(), Bf16Dot::kNative);
  } else {
    EXPECT_THROW(set_bf16_dot(Bf16Dot::kNative), std::invalid_argument);
    EXPECT_EQ(bf16_dot(), Bf16Dot::kEmulated);
  }
}

TEST(Bf16Pack, PairsOfRowsAndTransposedPairsOfColumns) {
  // x: 3 rows of 4 values (row stride 5), value 10 r + c
  std::vector<uint16_t> x(15);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) x[r * 5 + c] = simd::float_to_bf16(static_cast<float>(10 * r + c));
  std::vector<uint32_t> rows(2 * 6, 7u);  // ldo 6
  pack_row_pairs(x.data(), 5, 3, 4, rows.data(), 6);
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(lo_of(rows[c]), c);  // (x[0][c], x[1][c])
    EXPECT_EQ(hi_of(rows[c]), 10 + c);
    EXPECT_EQ(lo_of(rows[6 + c]), 20 + c);  // (x[2][c], 0): the missing fourth row
    EXPECT_EQ(hi_of(rows[6 + c]), 0.0f);
  }
  EXPECT_EQ(rows[4], 7u);             // past cols: untouched
  std::vector<uint32_t> cols(2 * 3);  // ldo 3: [pair of columns][row]
  pack_col_pairs_t(x.data(), 5, 3, 4, cols.data(), 3);
  for (int p = 0; p < 2; ++p)
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(lo_of(cols[p * 3 + r]), 10 * r + 2 * p);
      EXPECT_EQ(hi_of(cols[p * 3 + r]), 10 * r + 2 * p + 1);
    }
}

}  // namespace
}  // namespace poslab
