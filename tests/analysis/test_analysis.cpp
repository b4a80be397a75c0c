// Known answers for every metric of the position-table analysis.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "analysis/analysis.h"
#include "analysis/baselines.h"
#include "analysis/format.h"
#include "analysis/metric_list.h"
#include "analysis/table_io.h"
#include "source_paths.h"
#include "test_util.h"
#include "util/error.h"
#include "util/positions.h"
#include "util/wrap.h"

namespace poslab {
namespace {

constexpr double kTol = 1e-9;

torch::Tensor rank_r_table(int64_t P, int64_t d, int64_t r, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randn({P, r}, torch::kFloat64).matmul(torch::randn({r, d}, torch::kFloat64));  // (P, d), rank r
}

TEST(Analysis, RankRTableHasRNonzeroSingularValues) {
  for (int64_t r : {1, 2, 5}) {
    const Analysis a = analyze_table(rank_r_table(40, 24, r, 3), "rank");
    const double top = a.singular_values.front();
    int nonzero = 0;
    for (double s : a.singular_values) nonzero += s > 1e-9 * top;
    EXPECT_EQ(nonzero, r) << "rank " << r;
    EXPECT_LE(a.k90_uncentered, r);
    EXPECT_LE(a.k90, r);  // centring cannot raise the rank of the spread beyond r
    EXPECT_LE(a.k99, r);
    EXPECT_LE(a.effective_rank, r + kTol);
    EXPECT_LE(a.participation_ratio, r + kTol);
    EXPECT_NEAR(a.cumulative_variance.back(), 1.0, 1e-9);
  }
}

TEST(Analysis, EffectiveDimensionsOfKnownSpectra) {
  // Orthonormal rows scaled equally: every σ equal -> all effective ranks equal the count.
  auto W = torch::eye(8, torch::kFloat64);
  W = W - W.mean(0, true);  // centred already (rank 7): 7 equal σ
  const Analysis a = analyze_table(W, "eye");
  EXPECT_NEAR(a.effective_rank, 7.0, 1e-6);
  EXPECT_NEAR(a.roy_vetterli_rank, 7.0, 1e-6);
  EXPECT_NEAR(a.participation_ratio, 7.0, 1e-6);
  EXPECT_NEAR(a.stable_rank, 7.0, 1e-6);
  EXPECT_EQ(a.k50, 4);  // 4/7 >= 0.5
  EXPECT_EQ(a.k90, 7);  // 6/7 < 0.9
  // Two directions with variances 3:1 -> p = (0.75, 0.25).
  auto t = torch::zeros({4, 2}, torch::kFloat64);
  t.index_put_({torch::indexing::Slice(), 0}, torch::tensor({1.0, -1.0, 1.0, -1.0}, torch::kFloat64) * std::sqrt(3.0));
  t.index_put_({torch::indexing::Slice(), 1}, torch::tensor({1.0, 1.0, -1.0, -1.0}, torch::kFloat64));
  const Analysis b = analyze_table(t, "3:1");
  EXPECT_NEAR(b.explained_variance[0], 0.75, 1e-9);
  EXPECT_NEAR(b.effective_rank, std::exp(-(0.75 * std::log(0.75) + 0.25 * std::log(0.25))), 1e-9);
  const double q = std::sqrt(3.0) / (std::sqrt(3.0) + 1);
  EXPECT_NEAR(b.roy_vetterli_rank, std::exp(-(q * std::log(q) + (1 - q) * std::log(1 - q))), 1e-9);
  EXPECT_NEAR(b.participation_ratio, 1.0 / (0.75 * 0.75 + 0.25 * 0.25), 1e-9);
  EXPECT_NEAR(b.stable_rank, 4.0 / 3.0, 1e-9);
}

// Each k_q is the fewest components whose cumulative share reaches q, a share exactly at q included, and
// k90_uncentered reads the uncentred spectrum. The shares are known by hand:
//   eye(11), centred: 10 equal σ, cumulative k / 10 -> k50 = 5, k90 = 9 (0.9 reached exactly), k95 = k99 = 10;
//   variances 10:1 -> cumulative (10/11 = 0.909, 1) -> k90 = 1, k95 = 2;
//   equal variances 1:1 around a mean of 100 in the first column -> centred (0.5, 1): k90 = 2; uncentred, the mean's
//   direction holds (100² + 1) / (100² + 2) = 0.9999 of the squares: k90_uncentered = 1.
TEST(Analysis, ComponentCountsReachTheirShareExactly) {
  const Analysis eye = analyze_table(torch::eye(11, torch::kFloat64), "eye(11)");
  EXPECT_EQ(eye.k50, 5);
  EXPECT_EQ(eye.k90, 9);
  EXPECT_EQ(eye.k95, 10);
  EXPECT_EQ(eye.k99, 10);
  const auto a = torch::tensor({1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0}, torch::kFloat64);  // (8,) mean 0
  const auto b = torch::tensor({1.0, 1.0, -1.0, -1.0, 1.0, 1.0, -1.0, -1.0}, torch::kFloat64);  // orthogonal to a
  const Analysis ten_to_one = analyze_table(torch::stack({std::sqrt(10.0) * a, b}, 1), "10:1");
  EXPECT_NEAR(ten_to_one.cumulative_variance[0], 10.0 / 11.0, 1e-12);
  EXPECT_EQ(ten_to_one.k90, 1);
  EXPECT_EQ(ten_to_one.k95, 2);
  const Analysis offset = analyze_table(torch::stack({100.0 + a, b}, 1), "1:1 around a mean of 100");
  EXPECT_EQ(offset.k90, 2);
  EXPECT_EQ(offset.k90_uncentered, 1);
  // WᵀW = diag(Σ(100 + a)², Σb²) = diag(80008, 8): the singular values of W as it is, and of W less its mean row
  // (a's and b's alone, √8 each).
  ASSERT_EQ(offset.singular_values.size(), 2u);
  EXPECT_NEAR(offset.singular_values[0], std::sqrt(80008.0), 1e-9);
  EXPECT_NEAR(offset.singular_values[1], std::sqrt(8.0), 1e-9);
  ASSERT_EQ(offset.singular_values_centered.size(), 2u);
  for (double s : offset.singular_values_centered) EXPECT_NEAR(s, std::sqrt(8.0), 1e-9);
}

// Finite values whose squares overflow float64 (past 1e150), or whose fourth powers underflow it (below 1e-70), are
// refused, not analysed into NaN figures.
TEST(Analysis, ValuesWhoseSquaresOverflowAreRefused) {
  auto W = torch::randn({16, 4}, torch::kFloat64);
  W[3][2] = -2e200;
  EXPECT_EQ(test::error_of([&] { analyze_table(W, "huge.npy"); }),
            "huge.npy: the table holds values up to 2e+200, past what the analysis can square (1e150) | the model "
            "diverged or the file is damaged: analyse an earlier snapshot of a run, or another copy of the file");
  W[3][2] = 1e150;
  EXPECT_TRUE(std::isfinite(analyze_table(W, "large").effective_rank));
  // and values so small that their fourth powers underflow (a float64 table of 1e-200), not analysed into NaN
  W = torch::randn({16, 4}, torch::kFloat64);
  W = W / W.abs().max();
  EXPECT_EQ(
      test::error_of([&] { analyze_table(W * 1e-200, "tiny.npy"); })
          .rfind("tiny.npy: the table holds values of at most 1e-200, below what the analysis can raise to the fourth "
                 "power (1e-70) | scale the table up",
                 0),
      0u);
  const Analysis small = analyze_table(W * 1e-70, "small");
  EXPECT_TRUE(std::isfinite(small.participation_ratio) && small.participation_ratio > 0);
  EXPECT_NEAR(small.participation_ratio, analyze_table(W, "unit").participation_ratio, 1e-9);
  EXPECT_NEAR(small.smooth.adjacent_cosine, analyze_table(W, "unit").smooth.adjacent_cosine, 1e-9);
}

TEST(Analysis, OrthonormalRowsGiveAnIdentitySimilarityMatrix) {
  auto Q = std::get<0>(torch::linalg_qr(torch::randn({16, 16}, torch::kFloat64)));  // orthonormal rows
  AnalysisOptions opt;
  opt.keep_cosine_matrix = true;
  const Analysis a = analyze_table(Q, "orthonormal", opt);
  EXPECT_TRUE(torch::allclose(a.cosine_matrix.to(torch::kFloat64), torch::eye(16, torch::kFloat64), 1e-6, 1e-6));
  for (double c : a.cos_by_offset) EXPECT_NEAR(c, 0.0, 1e-6);
}

TEST(Analysis, SinusoidalSimilarityDependsOnlyOnDistance) {
  auto W = sinusoidal_table(48, 32);
  const auto C = cosine_matrix(W);
  double worst = 0;
  for (int64_t i = 0; i < 48; ++i)
    for (int64_t j = 0; j < 48; ++j) {
      const int64_t k = std::abs(i - j);
      worst = std::max(worst, std::abs(C[i][j].item<double>() - C[0][k].item<double>()));
    }
  EXPECT_LT(worst, 1e-6) << "max |C[i][j] - C[0][|i-j|]| (the table is float32)";
}

TEST(Analysis, WhiteNoiseDifferenceEnergiesAreTwoAndSix) {
  const Smoothness s = smoothness(random_table(2048, 64, 1.0, 5));
  EXPECT_NEAR(s.first_difference_energy, 2.0, 0.05);
  EXPECT_NEAR(s.second_difference_energy, 6.0, 0.15);
  EXPECT_NEAR(s.adjacent_cosine, 0.0, 0.02);
}

TEST(Analysis, ShuffledCopyOfASmoothTableIsNotSmooth) {
  const Analysis a = analyze_table(sinusoidal_table(128, 64), "sin");
  EXPECT_LT(a.smooth.first_difference_energy, 0.5);
  EXPECT_GT(a.shuffled.first_difference_energy, 1.0);
  EXPECT_GT(a.smooth.adjacent_cosine, 0.9);
  EXPECT_LT(a.shuffled.adjacent_cosine, a.smooth.adjacent_cosine - 0.3);
  // the shuffle is a permutation: same rows, same spectrum
  auto W = sinusoidal_table(128, 64);
  auto S = shuffle_rows(W, 1);
  EXPECT_TRUE(torch::allclose(std::get<0>(W.sort(0)), std::get<0>(S.sort(0))));
  EXPECT_TRUE(torch::equal(shuffle_rows(W, 1), S));  // fixed seed
}

// The null the shuffled copies stand for is a uniform draw of the rows' order: over many seeds each of the 24
// orders of 4 rows comes up alike, those that keep a row in place included (a shuffle that only ever drew cycles,
// Sattolo's, would never keep one).
TEST(Analysis, TheShuffleDrawsEveryOrderAlike) {
  std::map<std::vector<int64_t>, int> count;
  const int draws = 24000;
  for (int seed = 0; seed < draws; ++seed) ++count[shuffle_permutation(4, static_cast<uint64_t>(seed))];
  EXPECT_EQ(count.size(), 24u);
  for (const auto& [order, n] : count)  // 1000 expected, standard deviation 31: within 5 of them
    EXPECT_NEAR(n, draws / 24, 155) << order[0] << order[1] << order[2] << order[3];
  const std::vector<int64_t> unchanged = {0, 1, 2, 3};
  EXPECT_NEAR(count[unchanged], draws / 24, 155) << "the order left as it was is one of them";
}

TEST(Analysis, OffsetsAndHalfDecay) {
  // Rows on a circle: cos(w_i, w_{i+k}) = cos(2πk/P) exactly.
  const int64_t P = 32;
  auto ang = torch::arange(P, torch::kFloat64) * (2 * M_PI / P);
  auto W = torch::stack({torch::cos(ang), torch::sin(ang)}, 1);  // (P, 2)
  const Analysis a = analyze_table(W, "circle");
  for (int64_t k = 1; k < P; ++k) EXPECT_NEAR(a.cos_by_offset[k - 1], std::cos(2 * M_PI * k / P), 1e-9) << k;
  // half of cos(2π/32) = 0.4904 first crossed at k = 6 (cos(2π·6/32) = 0.383)
  ASSERT_TRUE(a.half_offset.has_value());
  EXPECT_EQ(*a.half_offset, 6);
  // A finer circle puts the crossing close to the half: one degree a row, c(1) = cos 1° and its half 0.49992, which
  // c(60) = cos 60° = 0.5 stays above and c(61) = 0.485 falls below (a rule at 0.4 or 0.6 of c(1) would say 67 or 54).
  auto deg = torch::arange(360, torch::kFloat64) * (M_PI / 180);
  const Analysis fine = analyze_table(torch::stack({torch::cos(deg), torch::sin(deg)}, 1), "degrees");
  EXPECT_EQ(fine.half_offset, std::optional<int>(61));
  // Neighbours pointing apart (every other row turned over: c(1) = cos(π − 2π/32) < 0): nothing to halve, no offset
  // (c(1) < c(1)/2 would hold at k = 1 itself).
  const Analysis apart = analyze_table(W * torch::pow(-1.0, torch::arange(P, torch::kFloat64)).unsqueeze(1), "apart");
  EXPECT_LT(apart.cos_by_offset[0], 0);
  EXPECT_FALSE(apart.half_offset.has_value());
  // Noise whose neighbours happen to be alike (c(1) > 0, within the shuffled copies' spread): its c(k) wanders about 0,
  // and the first k below half of c(1) would be a draw. None.
  torch::manual_seed(3);
  const Analysis noise = analyze_table(torch::randn({64, 16}, torch::kFloat64), "noise");
  ASSERT_GT(noise.cos_by_offset[0], 0);
  ASSERT_LT(noise.shuffle_control.z, kHalfOffsetMinZ);
  EXPECT_FALSE(noise.half_offset.has_value());
  // the circle's two PCs are one period along position, all power at 1 cycle per P positions
  ASSERT_GE(a.pc_frequencies.size(), 2u);
  EXPECT_NEAR(a.pc_frequencies[0].period, 32.0, 1e-6);  // the peak refined between bins, to about 1e-8 relative
  EXPECT_NEAR(a.pc_frequencies[0].power_share, 1.0, 1e-9);
  EXPECT_NEAR(a.sinusoid_r2, 1.0, 1e-9);
  EXPECT_NEAR(a.translation_invariance, 1.0, 1e-9);  // cos(w_i, w_j) = cos(2π(j − i)/P): offset alone
}

TEST(Analysis, SinusoidR2SeparatesSmoothFromNoise) {
  const Analysis noise = analyze_table(random_table(128, 64, 1.0, 2), "noise");
  // a random table: the 2K + 1 basis columns explain about 2K / (P − 1) of the spread
  EXPECT_NEAR(noise.sinusoid_r2, 16.0 / 127.0, 0.05);
  const Analysis hb = analyze_table(handbook_table(128, 64, 2), "handbook");
  EXPECT_GT(hb.smooth.adjacent_cosine, noise.smooth.adjacent_cosine + 0.3);
  // The summary gives white noise's figure beside the table's: on 16 rows K = 7 and 2K / (P − 1) = 14/15.
  const std::string short_table = summary_text(analyze_table(random_table(16, 8, 1.0, 1), "short"));
  EXPECT_NE(short_table.find("R² of the 7 lowest frequencies"), std::string::npos) << short_table;
  EXPECT_NE(short_table.find("(white noise ≈ 0.933)"), std::string::npos) << short_table;
  EXPECT_NE(summary_text(noise).find("(white noise ≈ 0.126)"), std::string::npos) << summary_text(noise);
}

TEST(Analysis, BoundaryOutliersAreNamed) {
  auto W = handbook_table(64, 32, 1);
  W[0] = W[0] * 10;  // an outsized first row, like GPT-2's position 0
  const Analysis a = analyze_table(W, "t");
  ASSERT_FALSE(a.boundary.empty());
  EXPECT_EQ(a.boundary.front().position, 0);
  EXPECT_TRUE(a.boundary.front().outlier);
  EXPECT_NE(a.boundary.front().reason.find("row norm"), std::string::npos);
  EXPECT_GT(a.boundary.front().norm_z, 3.0);
  EXPECT_NE(summary_text(a).find("position 0: row norm"), std::string::npos) << summary_text(a);
  for (size_t i = 1; i < a.boundary.size(); ++i) EXPECT_EQ(a.boundary[i].reason.find("row norm"), std::string::npos);
}

// A boundary row of an ordinary norm that points away from its inward neighbour is named by that cosine alone; at
// both ends (the last row's inward neighbour is the row before it).
TEST(Analysis, ABoundaryRowTurnedAwayIsNamedByItsNeighboursCosine) {
  auto W = handbook_table(64, 32, 1);
  W[0] = -W[0];  // the same norm, the opposite direction
  W[63] = -W[63];
  const Analysis a = analyze_table(W, "t");
  ASSERT_EQ(a.boundary.size(), 6u);  // 3 rows at each end
  auto cosine = [&](int64_t i, int64_t j) { return (W[i].dot(W[j]) / (W[i].norm() * W[j].norm())).item<double>(); };
  for (const auto* r : {&a.boundary.front(), &a.boundary.back()}) {
    EXPECT_TRUE(r->outlier) << r->position;
    EXPECT_NEAR(r->neighbour_cosine, r->position == 0 ? cosine(0, 1) : cosine(63, 62), 1e-12);
    EXPECT_LT(r->neighbour_cosine, 0.0);
    EXPECT_LT(r->cosine_z, -3.0);
    EXPECT_EQ(r->reason.find("row norm"), std::string::npos) << r->reason;
    EXPECT_EQ(r->reason.rfind("cosine to its neighbour ", 0), 0u) << r->reason;
  }
  EXPECT_EQ(a.boundary.back().position, 63);
  for (size_t i = 1; i + 1 < a.boundary.size(); ++i) EXPECT_FALSE(a.boundary[i].outlier) << a.boundary[i].reason;
}

// The interior that boundary rows are measured against holds only the pairs of two interior rows. A 20-row circle
// (0.1 rad a row) with row 17 turned 1 rad further: boundary rows 0..2 and 17..19, interior rows 3..16, whose
// pairs 3..15 all have cos 0.1. Row 17's inward neighbour is row 16 (cos 1.1), row 18's is row 17 (cos 0.9): both
// far below the interior. Counting pair 16 (rows 16 and 17) in the interior would widen its spread so that row 18
// passed (z -2.3).
TEST(Analysis, TheBoundaryInteriorHoldsOnlyPairsOfInteriorRows) {
  auto W = torch::zeros({20, 2}, torch::kFloat64);
  for (int64_t i = 0; i < 20; ++i) {
    const double angle = 0.1 * static_cast<double>(i) + (i == 17 ? 1.0 : 0.0);
    W[i][0] = std::cos(angle);
    W[i][1] = std::sin(angle);
  }
  const Analysis a = analyze_table(W, "circle with row 17 turned");
  ASSERT_EQ(a.boundary.size(), 6u);
  const BoundaryRow& r17 = a.boundary[3];
  const BoundaryRow& r18 = a.boundary[4];
  ASSERT_EQ(r17.position, 17);
  ASSERT_EQ(r18.position, 18);
  EXPECT_NEAR(r17.neighbour_cosine, std::cos(1.1), 1e-12);
  EXPECT_NEAR(r18.neighbour_cosine, std::cos(0.9), 1e-12);
  EXPECT_TRUE(r17.outlier) << r17.cosine_z;
  EXPECT_TRUE(r18.outlier) << r18.cosine_z;
  EXPECT_LT(r18.cosine_z, -3.0);
  EXPECT_FALSE(a.boundary[5].outlier) << a.boundary[5].reason;  // row 19: cos 0.1 to row 18
}

// A table whose rows are all the same (all zeros, or one row repeated) is said to be so, above its empty figures.
TEST(Analysis, AConstantTableSaysSoAboveItsFigures) {
  const std::string note = "every row is the same: nothing varies along position";
  for (const auto& W : {torch::zeros({16, 8}, torch::kFloat64), torch::ones({1, 8}, torch::kFloat64).repeat({16, 1})})
    EXPECT_NE(summary_text(analyze_table(W, "c")).find(note), std::string::npos) << summary_text(analyze_table(W, "c"));
  EXPECT_EQ(summary_text(analyze_table(random_table(16, 8, 1.0, 1), "r")).find(note), std::string::npos);
  // 0.7 is no binary fraction: the mean of 64 rows of it is not 0.7 itself, and what that rounding would leave after
  // centring (a component holding 100 % of nothing, an R² of −25) is no variance: no component, no sinusoid fit.
  for (const auto& W : {torch::full({64, 32}, 0.7, torch::kFloat64), torch::full({64, 32}, 0.1, torch::kFloat64),
                        torch::zeros({64, 32}, torch::kFloat64)}) {
    const Analysis a = analyze_table(W, "c");
    const std::string text = summary_text(a);
    EXPECT_NE(text.find(note), std::string::npos) << text;
    for (double sv : a.singular_values_centered) EXPECT_EQ(sv, 0.0) << text;
    EXPECT_EQ(a.noise.signal_rank, 0) << text;
    EXPECT_EQ(a.k50 + a.k90 + a.k95 + a.k99, 0) << text;
    EXPECT_EQ(a.sinusoid_r2, 0.0) << text;
    EXPECT_EQ(a.sinusoid_r2_strongest, 0.0) << text;
    EXPECT_TRUE(std::isnan(a.translation_invariance)) << a.translation_invariance;
    EXPECT_NE(text.find("translation invariance none (shuffled none)"), std::string::npos) << text;
  }
}

// The rows checked at each end are at most ⌊(P − 2)/4⌋, so that the interior they are measured against keeps half
// the rows: none of 4 rows (a 4-row table has no interior to speak of), 1 at each end of 8, 2 of 12, 3 of 14.
TEST(Analysis, BoundaryRowsLeaveHalfTheTableInside) {
  for (const auto& [P, checked] : std::vector<std::pair<int64_t, size_t>>{{4, 0}, {8, 2}, {12, 4}, {14, 6}, {64, 6}})
    EXPECT_EQ(analyze_table(handbook_table(P, 8, 1), "t").boundary.size(), checked) << P << " rows";
}

TEST(Analysis, RoundingIsNoBoundaryOutlier) {
  // Every row of the sinusoidal table has the norm √(C/2); stored in float32 and scaled, the norms differ only by
  // float32's rounding (about 1e-9 here), which is no spread to measure a row against.
  for (double scale : {0.05, 0.02}) {
    const Analysis a = analyze_table((sinusoidal_table(128, 64) * scale).to(torch::kFloat32), "sin");
    for (const BoundaryRow& r : a.boundary)
      EXPECT_FALSE(r.outlier) << scale << ": position " << r.position << ": " << r.reason;
  }
  // A circle in 2 columns of 4096, in float32: every row's norm and every neighbour's cosine is one value but for
  // rounding, which moves them as much as 2 columns hold the weight, not 4096: each z is 0.
  for (double radius : {0.02, 0.3, 7.0}) {
    auto W = torch::zeros({64, 4096}, torch::kFloat64);
    const auto t = torch::arange(64, torch::kFloat64) * (2 * M_PI / 23.0);
    W.select(1, 0).copy_(radius * torch::cos(t));
    W.select(1, 1).copy_(radius * torch::sin(t));
    const Analysis a = analyze_table(W.to(torch::kFloat32), "circle");
    ASSERT_EQ(a.boundary.size(), 6u);
    for (const BoundaryRow& r : a.boundary) {
      EXPECT_EQ(r.norm_z, 0.0) << radius << ": position " << r.position;
      EXPECT_EQ(r.cosine_z, 0.0) << radius << ": position " << r.position;
    }
  }
}

// Norms and cosines are measured against their own spread whatever the table's scale: GPT-2's rows times 1e-12 or
// 1e12 have the z-scores of GPT-2's rows. A constant added to every entry leaves rows whose cosines all lie within
// 1e-6 of 1, and whose spread (~1e-7) is still signal, far above float rounding: each z is (value − mean) / sd.
TEST(Analysis, ZScoresHoldAtAnyScaleAndOffset) {
  const torch::Tensor W = read_npy_table(poslab::test::source_dir() + "/tests/fixtures/gpt2_wpe_rows0-63.npy");
  const Analysis base = analyze_table(W, "gpt2");
  ASSERT_GT(base.shuffle_control.z, 5.0);
  for (double scale : {1e-12, 1e12}) {
    const Analysis a = analyze_table(W * scale, "scaled");
    EXPECT_NEAR(a.shuffle_control.z, base.shuffle_control.z, 1e-6 * std::abs(base.shuffle_control.z)) << scale;
    ASSERT_EQ(a.boundary.size(), base.boundary.size());
    for (size_t i = 0; i < a.boundary.size(); ++i) {
      EXPECT_NEAR(a.boundary[i].norm_z, base.boundary[i].norm_z, 1e-6 * std::abs(base.boundary[i].norm_z) + 1e-9)
          << scale << ": position " << a.boundary[i].position;
      EXPECT_NEAR(a.boundary[i].cosine_z, base.boundary[i].cosine_z, 1e-6 * std::abs(base.boundary[i].cosine_z) + 1e-9)
          << scale << ": position " << a.boundary[i].position;
    }
  }
  for (double offset : {100.0, 1000.0}) {
    const Analysis a = analyze_table(W.to(torch::kFloat64) + offset, "offset");
    const ShuffleControl& sc = a.shuffle_control;
    EXPECT_GT(sc.sd, 0.0) << offset;
    EXPECT_LT(1.0 - sc.mean, 1e-5) << offset << ": the rows are nearly parallel";
    EXPECT_NEAR(sc.z, (a.smooth.adjacent_cosine - sc.mean) / sc.sd, 1e-9 * std::abs(sc.z)) << offset;
    EXPECT_GT(sc.z, 5.0) << offset << ": GPT-2's order stands above its shuffles";
    for (const BoundaryRow& r : a.boundary) {
      EXPECT_LT(std::abs(r.norm_z), 1e8) << offset << ": position " << r.position;
      EXPECT_LT(std::abs(r.cosine_z), 1e8) << offset << ": position " << r.position;
    }
  }
}

TEST(Analysis, ZeroRowsLeaveTheAdjacentCosineFinite) {
  // Two zero rows side by side: their pair's cosine counts 0, as in the cosine matrix, not 0/0.
  auto W = random_table(128, 64, 1.0, 3);
  W[10].zero_();
  W[11].zero_();
  const Analysis a = analyze_table(W, "zeros");
  ASSERT_TRUE(std::isfinite(a.smooth.adjacent_cosine));
  EXPECT_NEAR(a.smooth.adjacent_cosine, a.cos_by_offset[0], 1e-12);
  EXPECT_TRUE(std::isfinite(a.shuffle_control.z));
}

TEST(Analysis, RowRanges) {
  auto W = torch::arange(40, torch::kFloat64).reshape({10, 4});
  int64_t first = -1;
  EXPECT_EQ(select_rows(W, "1:9", &first).size(0), 8);
  EXPECT_EQ(first, 1);
  EXPECT_EQ(select_rows(W, ":5").size(0), 5);
  EXPECT_EQ(select_rows(W, "-6:").size(0), 6);
  {  // a bound past the table is cut to it, as a Python slice is, and said
    test::CapturedLog log;
    EXPECT_EQ(select_rows(W, "2:100").size(0), 8);
    EXPECT_NE(log.str().find("--rows 2:100: the table has 10 rows; rows 2:10 are analysed"), std::string::npos)
        << log.str();
  }
  {
    test::CapturedLog log;
    select_rows(W, "-6:");
    EXPECT_EQ(log.str(), "");
  }
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"3", "--rows 3: expected BEGIN:END"},
      {"1:2:3", "--rows 1:2:3: expected BEGIN:END"},
      {"a:b", "--rows a:b: 'a' is not an integer"},
      {"01:08", "--rows 01:08: write 01 without its leading 0 (a whole number with one reads as octal)"},
      {"1:-04", "--rows 1:-04: write -04 without its leading 0 (a whole number with one reads as octal)"},
      {"5:6", "--rows 5:6: selects 1 of 10 rows; the analysis needs at least 4"},
      {"8:2", "--rows 8:2: selects 0 of 10 rows; the analysis needs at least 4"}};
  for (const auto& [rows, message] : bad)
    EXPECT_EQ(test::error_of([&] { select_rows(W, rows); }),
              message + " | write --rows BEGIN:END, half-open like a Python slice, e.g. --rows 1:64")
        << rows;
  AnalysisOptions opt;
  opt.row_offset = 1;
  EXPECT_EQ(analyze_table(select_rows(handbook_table(64, 16, 1), "1:64"), "t", opt).boundary.front().position, 1);
}

TEST(Analysis, BadTablesAreClearErrors) {
  auto message = [](const torch::Tensor& t) {
    try {
      analyze_table(t, "bad.npy");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(torch::zeros({2, 3, 4})).find("bad.npy: the table has 3 dimensions"), std::string::npos);
  EXPECT_NE(message(torch::zeros({3, 4})).find("at least 4 rows"), std::string::npos);
  // No columns: the hint is about the table's shape, not its number of positions.
  EXPECT_EQ(test::error_of([] {
              analyze_table(torch::zeros({64, 0}), "bad.npy");
            }),
            "bad.npy: the table is [64, 0]; the analysis needs at least 4 rows and 1 column | a table of no columns "
            "holds nothing to analyse: is this the position table (a .npy of shape (positions, width))?");
  auto nan = torch::randn({8, 4});
  nan[5][2] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_NE(message(nan).find("holds 1 NaN or Inf value (first at row 5, column 2)"), std::string::npos)
      << message(nan);
  nan[6][1] = std::numeric_limits<float>::infinity();
  EXPECT_NE(message(nan).find("holds 2 NaN or Inf values (first at row 5, column 2)"), std::string::npos)
      << message(nan);
  auto inf = torch::randn({8, 4});
  inf[1][0] = std::numeric_limits<float>::infinity();
  EXPECT_NE(message(inf).find("NaN or Inf"), std::string::npos);
  EXPECT_NE(message(torch::zeros({8, 4}, torch::kInt64)).find("dtype"), std::string::npos);
  EXPECT_NO_THROW(analyze_table(torch::randn({8, 4}).to(torch::kBFloat16), "bf16"));  // any float dtype
  EXPECT_THROW(synthetic_table("helix", 8, 4, 0), Error);
}

TEST(Analysis, JsonHasTheDocumentedKeys) {
  const auto j = to_json(analyze_table(handbook_table(32, 16, 0), "h"));
  for (const char* key : {"positions",
                          "dims",
                          "singular_values",
                          "explained_variance",
                          "k50",
                          "k90",
                          "k95",
                          "k99",
                          "k90_uncentered",
                          "effective_rank",
                          "roy_vetterli_rank",
                          "participation_ratio",
                          "stable_rank",
                          "adjacent_cosine",
                          "cos_by_offset",
                          "first_difference_energy",
                          "second_difference_energy",
                          "shuffled",
                          "row_norms",
                          "boundary_outliers",
                          "heavy_rows",
                          "pc_frequencies",
                          "sinusoid_r2",
                          "circles",
                          "helix",
                          "periodogram",
                          "strongest_frequencies",
                          "translation_invariance",
                          "monotonicity"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_TRUE(j["circles"].is_array());  // to_json refuses a scalar metric named as a structure
  EXPECT_TRUE(j["periodogram"].is_array());
  EXPECT_TRUE(j["shuffled"].contains("first_difference_energy"));
  EXPECT_EQ(j["cos_by_offset"].size(), 31u);
}

// The facts known of the first 64 rows of GPT-2's real position table (tests/fixtures/README.md).
TEST(Analysis, Gpt2TableMatchesTheKnownFacts) {
  const std::string path = poslab::test::source_dir() + "/tests/fixtures/gpt2_wpe_rows0-63.npy";
  const torch::Tensor W = read_npy_table(path);
  const Analysis all = analyze_table(W, path);
  EXPECT_NEAR(all.row_norms[0], 9.876, 1e-3);
  EXPECT_NEAR(all.row_norms[1], 5.192, 1e-3);
  double mean10 = 0;
  for (int i = 10; i < 64; ++i) mean10 += all.row_norms[i] / 54;
  EXPECT_NEAR(mean10, 3.462, 1e-3);
  EXPECT_NEAR(all.adjacent_cosines[0], 0.524, 1e-3);
  double adj = 0;
  for (int i = 1; i < 63; ++i) adj += all.adjacent_cosines[i] / 62;
  EXPECT_NEAR(adj, 0.9969, 1e-4);
  ASSERT_FALSE(all.boundary.empty());
  EXPECT_EQ(all.boundary.front().position, 0);
  EXPECT_TRUE(all.boundary.front().outlier) << "position 0 is a boundary outlier";
  ASSERT_EQ(all.heavy_rows.size(), 1u);  // row 0 alone holds 29 % of rows 0–63's variance
  EXPECT_EQ(all.heavy_rows[0].position, 0);
  EXPECT_NEAR(all.heavy_rows[0].share, 0.294, 1e-3);

  AnalysisOptions opt;
  const torch::Tensor rows = select_rows(W, "1:64", &opt.row_offset);
  const Analysis a = analyze_table(rows, path, opt);
  EXPECT_NEAR(a.explained_variance[0], 0.720, 1e-3);
  EXPECT_NEAR(a.explained_variance[1], 0.199, 1e-3);
  EXPECT_NEAR(a.explained_variance[2], 0.054, 1e-3);
  EXPECT_EQ(a.k90, 2);
  EXPECT_NEAR(a.smooth.adjacent_cosine, 0.9969, 1e-4);
  EXPECT_TRUE(a.heavy_rows.empty());
}

// A helix whose straight ramp has a circle coordinate's variance: PCA mixes the ramp with a coordinate, and the
// component taken for the slow axis peaks at the circle's frequency. The axes turned apart give the ramp's period,
// not the circle's (periods of 16 and 32 in 128 rows).
TEST(Analysis, AHelixWhoseRampMixesWithACoordinateKeepsTheRampsPeriod) {
  for (double period : {16.0, 32.0}) {
    const int64_t P = 128, d = 32;
    auto p = torch::arange(P, torch::kFloat64);
    auto base = torch::zeros({P, d}, torch::kFloat64);
    base.select(1, 0) = torch::cos(2 * M_PI * p / period);
    base.select(1, 1) = torch::sin(2 * M_PI * p / period);
    base.select(1, 2) = (p / (P - 1) - 0.5) * std::sqrt(6.0);  // variance ½, a coordinate's
    torch::manual_seed(1);
    const auto Q = std::get<0>(torch::linalg_qr(torch::randn({d, d}, torch::kFloat64)));
    const Analysis a = analyze_table(base.matmul(Q.transpose(0, 1)) + random_table(P, d, 0.05, 2), "helix");
    ASSERT_FALSE(a.circles.empty()) << period;
    EXPECT_NEAR(a.circles[0].period, period, 0.02 * period);
    ASSERT_TRUE(a.helix.has_value()) << period;
    EXPECT_NEAR(a.helix->circle.period, period, 0.02 * period);
    EXPECT_GT(a.helix->slow_period, P) << "period " << period << ": the slow axis read the circle's period";
    EXPECT_GT(a.helix->explained, 0.9);
  }
}

// One interior row ×100 in a noise table: it alone holds 98 % of the variance, and the spectrum reads it as one
// component above the noise floor. The summary names the row, by the table's own numbering when sliced.
TEST(Analysis, ARowHoldingMuchOfTheVarianceAloneIsNamed) {
  auto W = random_table(64, 64, 0.02, 3);
  W[30] = W[30] * 100;
  const Analysis a = analyze_table(W, "t");
  ASSERT_EQ(a.heavy_rows.size(), 1u);
  EXPECT_EQ(a.heavy_rows[0].position, 30);
  EXPECT_GT(a.heavy_rows[0].share, 0.95);
  EXPECT_EQ(a.noise.signal_rank, 1);  // what the note is for
  EXPECT_NE(summary_text(a).find("row 30 alone holds 9"), std::string::npos) << summary_text(a);
  EXPECT_EQ(to_json(a)["heavy_rows"][0]["position"], 30);

  AnalysisOptions opt;
  const torch::Tensor rows = select_rows(W, "10:64", &opt.row_offset);
  const Analysis sliced = analyze_table(rows, "t", opt);
  ASSERT_EQ(sliced.heavy_rows.size(), 1u);
  EXPECT_EQ(sliced.heavy_rows[0].position, 30);

  // Two rows of a quarter each are both named, heaviest first; noise and a smooth table name none.
  auto two = random_table(64, 64, 0.02, 4);
  two[10] = two[10] * 20, two[50] = two[50] * 25;
  const Analysis b = analyze_table(two, "two");
  ASSERT_EQ(b.heavy_rows.size(), 2u);
  EXPECT_EQ(b.heavy_rows[0].position, 50);
  EXPECT_EQ(b.heavy_rows[1].position, 10);
  EXPECT_TRUE(analyze_table(random_table(64, 64, 0.02, 5), "noise").heavy_rows.empty());
  EXPECT_TRUE(analyze_table(handbook_table(64, 32, 1), "smooth").heavy_rows.empty());
  EXPECT_EQ(summary_text(analyze_table(random_table(64, 64, 0.02, 5), "noise")).find("alone holds"), std::string::npos);
}

// A value that rounds to zero in its metric's format reads without a sign; a value that does not keeps it.
// The summary counts its components in words: one component above the floor "holds", several "hold".
TEST(Analysis, TheNoiseFloorLineCountsItsComponents) {
  const torch::Tensor ramp = torch::arange(64, torch::kFloat64).unsqueeze(1) / 63.0 - 0.5;
  const torch::Tensor rank1 = ramp * torch::ones({1, 16}, torch::kFloat64) + random_table(64, 16, 1e-3, 3);
  const Analysis one = analyze_table(rank1, "one");
  ASSERT_EQ(one.noise.signal_rank, 1);
  EXPECT_NE(summary_text(one).find("noise floor   1 component above it holds "), std::string::npos)
      << summary_text(one);
  EXPECT_NE(summary_text(analyze_table(handbook_table(32, 16, 0), "h")).find(" components above it hold "),
            std::string::npos);
  // The sinusoidal table in float64 has components above the floor (10⁻⁶·σ_1) that hold less than 10⁻⁹ of the
  // variance: the periods line says none of them has no variance.
  const Analysis sin = analyze_table(sinusoidal_table(64, 32), "sin");
  const std::string text = summary_text(sin);
  size_t tiny = 0;
  for (int k = 0; k < sin.noise.signal_rank; ++k) tiny += sin.explained_variance[static_cast<size_t>(k)] < 1e-9;
  ASSERT_GT(tiny, 0u) << "the case this checks";
  EXPECT_EQ(text.find("onward: no variance"), std::string::npos) << text;    // every component listed has variance
  EXPECT_NE(text.find("and 6 more components"), std::string::npos) << text;  // all 14 listed, 8 by name
  EXPECT_NE(text.find("(1e-6 × σ_1: no noise above rounding)"), std::string::npos) << text;
}

TEST(Analysis, AMetricRoundingToZeroHasNoMinusSign) {
  Analysis a;
  for (const Metric& m : scalar_metrics())
    if (std::string(m.key) == "probe_r2") {
      a.probe.r2 = -0.0004;
      EXPECT_EQ(format_metric(m, a), "0.000");
      a.probe.r2 = -0.0006;
      EXPECT_EQ(format_metric(m, a), "-0.001");
      a.probe.r2 = 0.0;
      EXPECT_EQ(format_metric(m, a), "0.000");
    }
}

// The console's side-by-side table: the metrics' labels where they fit the width, their column names where not, and
// every headline metric in list order either way; each group of metrics has a console table (cli/analyze_cmd.cpp).
TEST(Analysis, ComparisonTableFitsItsWidth) {
  const Analysis a = analyze_table(sinusoidal_table(64, 32), "sin");
  const Analysis b = analyze_table(torch::randn({64, 32}, torch::TensorOptions().dtype(torch::kFloat64)), "random");
  const std::vector<std::pair<std::string, const Analysis*>> columns = {
      {"step 0", &b}, {"step 1500", &a}, {"random", &b}, {"sinusoidal", &a}, {"handbook", &a}};
  auto lines_of = [](const std::string& text) {
    std::vector<std::string> out;
    for (size_t at = 0; at < text.size();) {
      const size_t nl = text.find('\n', at);
      out.push_back(text.substr(at, nl - at));
      at = nl + 1;
    }
    return out;
  };
  const std::vector<Metric> metrics = headline_metrics();
  const std::vector<std::string> wide = lines_of(comparison_table(columns, 200));
  const std::vector<std::string> narrow = lines_of(comparison_table(columns, 80));
  ASSERT_EQ(wide.size(), metrics.size() + 1);
  ASSERT_EQ(narrow.size(), metrics.size() + 1);
  for (size_t k = 0; k < metrics.size(); ++k) {
    EXPECT_EQ(wide[k + 1].rfind(std::string(metrics[k].label) + " ", 0), 0u) << wide[k + 1];
    EXPECT_EQ(narrow[k + 1].rfind(std::string(metrics[k].column) + " ", 0), 0u) << narrow[k + 1];
    EXPECT_TRUE(std::string("spectrum order form").find(metrics[k].group) != std::string::npos &&
                std::string(metrics[k].group).size() > 0)
        << metrics[k].key << ": no console group";
  }
  for (const std::string& line : narrow) EXPECT_LE(display_width(line), 80u) << line;
  // The values right-aligned under their names: the last column ends where its header does.
  EXPECT_EQ(narrow[0].size(), narrow[0].find("handbook") + std::string("handbook").size());
}

// The analysis's memory is known before it starts: a table too large for the room stops with both sizes, the limit
// and the hint, and a table that fits (or no limit, or the check skipped) goes on.
TEST(Analysis, ATableTooLargeToAnalyseStopsBeforeItStarts) {
  test::ScopedEnv checked("POSLAB_NO_MEMORY_CHECK", nullptr);
  EXPECT_EQ(analysis_memory_need(1000, 10), 8 * (1000 * 1000 + 2 * 1000 * 10));
  EXPECT_EQ(analysis_memory_need(4000000000, 768), std::numeric_limits<int64_t>::max());  // saturates, no overflow
  const MemoryRoom room{1000000000, "the address-space limit (ulimit -v 976562)"};
  EXPECT_NO_THROW(check_analysis_fits(8000, 768, "t.npy", "fewer rows", room));  // 0.61 GB
  const std::string msg =
      test::error_of([&] { check_analysis_fits(20000, 768, "t.npy: 20,000 positions", "fewer rows", room); });
  EXPECT_NE(msg.find("t.npy: 20,000 positions: its analysis (the similarity of every pair of its 20,000 rows alone "
                     "3.2 GB) needs 3.4 GB but this process may use 1.0 GB, the address-space limit"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("fewer rows"), std::string::npos) << msg;
  EXPECT_NO_THROW(check_analysis_fits(20000, 768, "t.npy", "fewer rows", MemoryRoom{}));  // no limit found
  test::ScopedEnv skipped("POSLAB_NO_MEMORY_CHECK", "1");
  EXPECT_NO_THROW(check_analysis_fits(20000, 768, "t.npy", "fewer rows", room));
}

}  // namespace
}  // namespace poslab
