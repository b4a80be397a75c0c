// Position vs token subspaces on embeddings built so that the answer is known: a table that varies only where the
// tokens do not (orthogonal, bottom of the token spectrum) and one that varies where they do (aligned, top).
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/position_token.h"
#include "test_tensors.h"
#include "test_util.h"

namespace poslab {
namespace {

using test::error_of;

using test::gaussian;

// V tokens in C = 16 dims with variance 100, 50, 25 along e_0, e_1, e_2 and 0.01 elsewhere.
torch::Tensor tokens(int64_t V) {
  auto scale = torch::full({16}, 0.1, torch::kFloat64);
  scale[0] = 10, scale[1] = std::sqrt(50.0), scale[2] = 5;
  return gaussian({V, 16}, 1) * scale;
}

// P positions on a circle in the plane of e_a and e_b, plus a little noise (so that the noise floor has a level).
torch::Tensor circle(int64_t P, int a, int b) {
  auto W = 1e-3 * gaussian({P, 16}, 9);
  const auto t = torch::arange(P, torch::kFloat64) * (2 * M_PI / P);
  W.select(1, a).copy_(torch::cos(t));
  W.select(1, b).copy_(torch::sin(t));
  return W;
}

TEST(PositionToken, ATableWhereTheTokensDoNotVaryIsOrthogonalAndAtTheBottom) {
  const auto g = position_token_geometry(tokens(2000), circle(64, 13, 14));
  EXPECT_EQ(g.k, 2);  // a circle: two components above the noise floor
  ASSERT_EQ(g.principal_angles.size(), 2u);
  for (double a : g.principal_angles) EXPECT_GT(a, 85.0);
  for (double r : g.token_variance_ratio) EXPECT_LT(r, 0.01);
  for (double q : g.token_spectrum_quantile) EXPECT_GT(q, 0.15);  // among the 13 weak directions, not the top 3
}

TEST(PositionToken, ATableAlongTheTokensTopDirectionsIsAlignedAndAtTheTop) {
  const auto g = position_token_geometry(tokens(2000), circle(64, 0, 1));
  ASSERT_EQ(g.principal_angles.size(), 2u);
  for (double a : g.principal_angles) EXPECT_LT(a, 5.0);
  EXPECT_GT(g.token_variance_ratio[0] + g.token_variance_ratio[1], 2 * 4.0);  // e_0, e_1 hold most token variance
  for (double q : g.token_spectrum_quantile) EXPECT_LT(q, 2.0 / 16);
}

// Tokens ±s_j e_j: their variance along e_j is 2 s_j², and the token directions by falling variance are e_0, e_1, …
// Against tokens of one variance in every direction (s_j = 1) any position direction holds exactly the mean
// variance: ratio 1. With s_j² = 16 − j, a circle in the plane of e_0 and e_1 lies along the token directions of ranks
// 0 and 1, whose quantiles (rank + ½)/C are 0.5/16 and 1.5/16: the two position directions, an orthonormal pair in
// that plane, average 1/16 whatever their turn within it.
TEST(PositionToken, RatiosAndQuantilesOfKnownTokenSpectra) {
  auto noiseless_circle = [] {
    auto W = torch::zeros({64, 16}, torch::kFloat64);
    const auto t = torch::arange(64, torch::kFloat64) * (2 * M_PI / 64);
    W.select(1, 0).copy_(torch::cos(t));
    W.select(1, 1).copy_(torch::sin(t));
    return W;
  };
  const auto eye = torch::eye(16, torch::kFloat64);
  const auto isotropic = position_token_geometry(torch::cat({eye, -eye}), noiseless_circle(), 2);
  ASSERT_EQ(isotropic.token_variance_ratio.size(), 2u);
  for (double r : isotropic.token_variance_ratio) EXPECT_NEAR(r, 1.0, 1e-12);
  const auto s = torch::sqrt(16 - torch::arange(16, torch::kFloat64));
  const auto ranked = position_token_geometry(torch::cat({torch::diag(s), -torch::diag(s)}), noiseless_circle(), 2);
  ASSERT_EQ(ranked.token_spectrum_quantile.size(), 2u);
  EXPECT_NEAR((ranked.token_spectrum_quantile[0] + ranked.token_spectrum_quantile[1]) / 2, 1.0 / 16, 1e-12);
  // and their variance ratios: (16 + 15) / mean(16 … 1) over the two, 31 / 8.5
  EXPECT_NEAR(ranked.token_variance_ratio[0] + ranked.token_variance_ratio[1], 31 / 8.5, 1e-12);
}

TEST(PositionToken, CosinesMatchALoopAndKCanBeGiven) {
  const auto T = gaussian({50, 16}, 3), W = gaussian({20, 16}, 4);
  const auto g = position_token_geometry(T, W, 3);
  EXPECT_EQ(g.k, 3);
  double mx = 0, sum = 0;
  for (int64_t a = 0; a < 50; ++a)
    for (int64_t b = 0; b < 20; ++b) {
      const double c =
          std::abs((T[a] * W[b]).sum().item<double>() / (T[a].norm().item<double>() * W[b].norm().item<double>()));
      mx = std::max(mx, c);
      sum += c;
    }
  EXPECT_NEAR(g.max_abs_cosine, mx, 1e-12);
  EXPECT_NEAR(g.mean_abs_cosine, sum / 1000, 1e-12);
  EXPECT_NE(error_of([&] {
              position_token_geometry(T, gaussian({20, 8}, 5));
            }).find("must be (V, C) and (P, C)"),
            std::string::npos);
}

}  // namespace
}  // namespace poslab
