// Translation invariance and monotonicity (analysis/offsets.h) on similarity matrices of known answer: Toeplitz,
// shuffled, random, rising and flat, and every triple counted one by one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "analysis/offsets.h"

using namespace poslab;

namespace {

// A symmetric (P, P) matrix with unit diagonal from f(i, j), i < j.
template <typename F>
std::vector<double> matrix(int P, F f) {
  std::vector<double> C(static_cast<size_t>(P * P), 1.0);
  for (int i = 0; i < P; ++i)
    for (int j = i + 1; j < P; ++j) C[i * P + j] = C[j * P + i] = f(i, j);
  return C;
}

}  // namespace

TEST(Offsets, TranslationInvarianceOfToeplitzShuffledAndRandomMatrices) {
  const int P = 64;
  const std::vector<double> toeplitz = matrix(P, [](int i, int j) { return std::exp(-(j - i) / 6.0); });
  EXPECT_NEAR(translation_invariance(toeplitz.data(), P), 1.0, 1e-12);
  std::mt19937 rng(5);
  std::vector<int64_t> perm(P);
  for (int i = 0; i < P; ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  EXPECT_LT(translation_invariance(toeplitz.data(), P, &perm), 0.1);
  std::normal_distribution<double> n;
  const std::vector<double> random = matrix(P, [&](int, int) { return n(rng); });
  EXPECT_LT(translation_invariance(random.data(), P), 0.1);  // ≈ 2/P: each diagonal explains its own mean
  // A rank-one change along i alone is not explained by offset.
  const std::vector<double> row_only =
      matrix(P, [](int i, int j) { return std::exp(-(j - i) / 6.0) * (i < P / 2 ? 1 : 0.2); });
  const double ti = translation_invariance(row_only.data(), P);
  EXPECT_GT(ti, 0.2);
  EXPECT_LT(ti, 0.9);
  const std::vector<double> flat = matrix(P, [](int, int) { return 0.5; });
  EXPECT_TRUE(std::isnan(translation_invariance(flat.data(), P)));  // no variance to explain
}

TEST(Offsets, MonotonicityOfFallingRisingRandomAndFlatMatrices) {
  const int P = 50;
  const std::vector<double> falling = matrix(P, [](int i, int j) { return std::exp(-(j - i) / 6.0); });
  const std::vector<double> rising = matrix(P, [](int i, int j) { return 1.0 * (j - i); });
  const std::vector<double> flat = matrix(P, [](int, int) { return 0.3; });
  EXPECT_DOUBLE_EQ(monotonicity(falling.data(), P), 1.0);
  EXPECT_DOUBLE_EQ(monotonicity(rising.data(), P), 0.0);
  EXPECT_DOUBLE_EQ(monotonicity(flat.data(), P), 0.5);  // ties count half
  std::mt19937 rng(9);
  std::normal_distribution<double> n;
  const std::vector<double> random = matrix(P, [&](int, int) { return n(rng); });
  EXPECT_NEAR(monotonicity(random.data(), P), 0.5, 0.02);
}

// Merge-sort counting against every triple counted one by one, on a random matrix with ties, shuffled and not.
TEST(Offsets, MonotonicityEqualsTheCountOfEveryTriple) {
  const int P = 23;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> level(0, 6);  // few levels: many ties
  const std::vector<double> C = matrix(P, [&](int, int) { return level(rng) / 6.0; });
  std::vector<int64_t> perm(P);
  for (int i = 0; i < P; ++i) perm[i] = (i * 5 + 3) % P;
  const std::vector<int64_t>* shuffled = &perm;
  for (const std::vector<int64_t>* order : {static_cast<const std::vector<int64_t>*>(nullptr), shuffled}) {
    auto at = [&](int i, int j) { return order ? C[(*order)[i] * P + (*order)[j]] : C[i * P + j]; };
    double hits = 0, n = 0;
    for (int i = 0; i < P; ++i)
      for (int j = i + 1; j < P; ++j)
        for (int k = j + 1; k < P; ++k)
          for (auto [near, far] : {std::pair{at(i, j), at(i, k)}, std::pair{at(k, j), at(k, i)}}) {
            hits += near > far ? 1.0 : near == far ? 0.5 : 0.0;
            n += 1;
          }
    EXPECT_NEAR(monotonicity(C.data(), P, order), hits / n, 1e-12) << (order ? "shuffled" : "as is");
  }
}
