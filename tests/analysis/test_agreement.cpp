// Agreement of two tables up to rotation and scale: exact on a rotated, rescaled copy, at the theory's level on
// independent random tables, and equal to NumPy on real tables of two seeds.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

#include "analysis/agreement.h"
#include "analysis/analysis.h"
#include "analysis/table_io.h"
#include "source_paths.h"
#include "test_tensors.h"
#include "test_util.h"

namespace poslab {
namespace {

using test::error_of;

using test::gaussian;

// A random orthogonal (d, d) matrix (QR of a Gaussian one).
torch::Tensor random_rotation(int64_t d, uint64_t seed) {
  return std::get<0>(torch::linalg_qr(gaussian({d, d}, seed)));
}

// Rank-3 smooth structure over P positions in d dims plus a little noise: 3 components above the noise floor.
torch::Tensor planted_pair(int64_t P, int64_t d, uint64_t seed) {
  const auto t = torch::arange(P, torch::kFloat64).unsqueeze(1) / P;                                // (P, 1)
  const auto basis = torch::cat({torch::sin(2 * M_PI * t), torch::cos(2 * M_PI * t), t - 0.5}, 1);  // (P, 3)
  return basis.matmul(gaussian({3, d}, seed)) + 0.01 * gaussian({P, d}, seed + 1);
}

std::string agreement_fixture(const std::string& rel) { return poslab::test::source_dir() + "/tests/fixtures/" + rel; }

TEST(Agreement, ARotatedRescaledCopyAgreesExactly) {
  const auto A = planted_pair(96, 40, 1);
  const auto B = 3.7 * A.matmul(random_rotation(40, 2));
  const Agreement g = table_agreement(A, B, "A", "B");
  EXPECT_NEAR(g.cka, 1.0, 1e-12);
  EXPECT_NEAR(g.procrustes_residual, 0.0, 1e-6);
  EXPECT_NEAR(g.similarity_correlation, 1.0, 1e-12);  // row cosines survive rotation and scale
  EXPECT_EQ(g.signal_rank_a, 3);
  EXPECT_EQ(g.signal_rank_b, 3);
  EXPECT_EQ(g.k, 3);
  EXPECT_FALSE(g.k_given);
  ASSERT_EQ(g.principal_angles.size(), 3u);
  for (double a : g.principal_angles) EXPECT_NEAR(a, 0.0, 1e-3);
  EXPECT_NEAR(g.mean_cos2, 1.0, 1e-9);
  // A reflection and a shift of every row change none of the rotation-invariant numbers (the cosines do change).
  auto flip = torch::eye(40, torch::kFloat64);
  flip[0][0] = -1;
  const Agreement h = table_agreement(A, A.matmul(flip) + 5.0, "A", "A reflected and shifted");
  EXPECT_NEAR(h.cka, 1.0, 1e-12);
  EXPECT_NEAR(h.procrustes_residual, 0.0, 1e-6);
}

TEST(Agreement, IndependentRandomTablesAgreeAtTheTheorysLevel) {
  // E[CKA] ≈ d / (P + d) and E[cos²] of random k-subspaces of the P − 1 centred dimensions = k / (P − 1).
  const int64_t P = 128, d = 64;
  double cka = 0, cos2 = 0, sim = 0;
  const int pairs = 12;
  for (int s = 0; s < pairs; ++s) {
    const Agreement g = table_agreement(gaussian({P, d}, 100 + 2 * s), gaussian({P, d}, 101 + 2 * s), "A", "B", 8);
    EXPECT_TRUE(g.k_given);
    EXPECT_EQ(g.signal_rank_a, 0);                        // pure noise: nothing above the floor
    EXPECT_NEAR(g.mean_cos2_random, 8.0 / 127.0, 1e-15);  // k / (P − 1): centring leaves P − 1 dimensions
    cka += g.cka / pairs;
    cos2 += g.mean_cos2 / pairs;
    sim += g.similarity_correlation / pairs;
    EXPECT_GT(g.procrustes_residual, 0.8);
  }
  EXPECT_NEAR(expected_random_cka(P, d, d), 64.0 / 192.0, 1e-12);
  EXPECT_NEAR(cka, expected_random_cka(P, d, d), 0.01);
  EXPECT_NEAR(cos2, 8.0 / 127.0, 0.02);
  EXPECT_NEAR(sim, 0.0, 0.02);
}

TEST(Agreement, TablesOfDifferentWidthsCompareOnTheirPositions) {
  // B = A Q with Q (40, 64) of orthonormal rows: the same geometry in a wider space.
  const auto A = planted_pair(96, 40, 1);
  const auto Q = std::get<0>(torch::linalg_qr(gaussian({64, 40}, 5))).transpose(0, 1);  // (40, 64), Q Qᵀ = I
  const Agreement g = table_agreement(A, 2.0 * A.matmul(Q), "A", "B wide");
  EXPECT_EQ(g.dims, 40);
  EXPECT_EQ(g.dims_b, 64);
  EXPECT_NEAR(g.cka, 1.0, 1e-12);
  EXPECT_NEAR(g.procrustes_residual, 0.0, 1e-6);  // the narrower padded with zeros: an exact rotation
  EXPECT_NEAR(g.similarity_correlation, 1.0, 1e-12);
  EXPECT_EQ(g.k, 3);
  EXPECT_NEAR(g.mean_cos2, 1.0, 1e-9);
  EXPECT_NEAR(expected_random_cka(96, 40, 64), std::sqrt(40.0 * 64 / ((95 + 41) * (95 + 65.0))), 1e-12);
  EXPECT_NE(agreement_text(g).find("96 positions, widths 40 and 64"), std::string::npos) << agreement_text(g);
}

TEST(Agreement, TheShuffledNullFitsStructuredTables) {
  // Against a copy of itself the measures sit far above B's shuffled rows; against an unrelated smooth table of
  // another width they sit inside the shuffled spread, where the random-table level says nothing.
  const auto A = planted_pair(96, 40, 1);
  const Agreement same = table_agreement(A, A.matmul(random_rotation(40, 2)), "A", "A rotated");
  EXPECT_EQ(same.shuffles, 20);
  EXPECT_GT(same.cka, same.cka_shuffled.mean + 5 * same.cka_shuffled.sd);
  EXPECT_GT(same.similarity_correlation, same.similarity_shuffled.mean + 5 * same.similarity_shuffled.sd);
  EXPECT_GT(same.mean_cos2, same.mean_cos2_shuffled.mean + 5 * same.mean_cos2_shuffled.sd);
  EXPECT_LT(same.procrustes_residual, same.procrustes_shuffled.mean - 5 * same.procrustes_shuffled.sd);
  // Shuffles are seeded: the same numbers every run.
  const Agreement again = table_agreement(A, A.matmul(random_rotation(40, 2)), "A", "A rotated");
  EXPECT_EQ(again.cka_shuffled.mean, same.cka_shuffled.mean);
  const auto j = to_json(same);
  EXPECT_EQ(j["shuffles"], 20);
  EXPECT_NEAR(j["shuffled"]["cka"]["mean"].get<double>(), same.cka_shuffled.mean, 0);
  EXPECT_NE(agreement_text(same).find("B's rows shuffled: "), std::string::npos);
  // No shuffles asked: no null.
  EXPECT_FALSE(to_json(table_agreement(A, A, "A", "A", 0, 0)).contains("shuffled"));
}

// The null is the mean and the sample standard deviation (n − 1) of the measure over the shuffled copies, copy s
// shuffled by shuffle_permutation(P, seed + s). For two copies x0, x1: mean (x0 + x1) / 2, sd |x0 − x1| / √2.
TEST(Agreement, TheShuffledNullIsTheMeanAndSampleSdOfTheCopies) {
  const auto A = planted_pair(24, 8, 1), B = planted_pair(24, 8, 3);
  const Agreement g = table_agreement(A, B, "A", "B", 0, /*shuffles=*/2, /*seed=*/7);
  ASSERT_EQ(g.shuffles, 2);
  const auto A_c = A - A.mean(0, true), B_c = B - B.mean(0, true);
  std::vector<double> cka;
  for (uint64_t s = 0; s < 2; ++s)
    cka.push_back(linear_cka(A_c, B_c.index_select(0, torch::tensor(shuffle_permutation(24, 7 + s)))));
  ASSERT_NE(cka[0], cka[1]) << "two copies alike leave no spread to check";
  EXPECT_NEAR(g.cka_shuffled.mean, (cka[0] + cka[1]) / 2, 1e-12);
  EXPECT_NEAR(g.cka_shuffled.sd, std::abs(cka[0] - cka[1]) / std::sqrt(2.0), 1e-12);
}

// Each table's components are counted against the noise floor of its own shape. B (32, 64) is built with known
// centred singular values: 10, 8, 3.5 above a bulk of 28 from 2 down to 0.5. Its floor (m = 31 of n = 64, median
// 1.33, threshold about 2.9) passes three; the floor of A's width 16 (the top 16 of n = 31, median 1.75, threshold
// about 3.8) would pass two. The count is the one analysing B alone gives, on either side of the comparison.
TEST(Agreement, EachTableIsCountedAgainstTheNoiseFloorOfItsOwnWidth) {
  const int64_t P = 32;
  std::vector<double> sigma = {10.0, 8.0, 3.5};
  for (int i = 0; i < 28; ++i) sigma.push_back(2.0 - 1.5 * i / 27.0);
  const auto G = gaussian({P, 31}, 11);
  const auto U = std::get<0>(torch::linalg_qr(G - G.mean(0, true)));     // (32, 31), columns orthogonal to the ones
  const auto V = std::get<0>(torch::linalg_qr(gaussian({64, 31}, 12)));  // (64, 31)
  const auto B = U.matmul(torch::diag(torch::tensor(sigma, torch::kFloat64))).matmul(V.transpose(0, 1));  // (32, 64)
  const auto A = gaussian({P, 16}, 13);
  const int own = analyze_table(B, "B").noise.signal_rank;
  EXPECT_EQ(own, 3);
  EXPECT_EQ(table_agreement(A, B, "A", "B").signal_rank_b, own);
  EXPECT_EQ(table_agreement(B, A, "B", "A").signal_rank_a, own);
}

TEST(Agreement, WithoutSignalThereAreNoAnglesUnlessKIsGiven) {
  const Agreement g = table_agreement(gaussian({64, 32}, 1), gaussian({64, 32}, 2), "noise A", "noise B");
  EXPECT_EQ(g.k, 0);
  EXPECT_TRUE(g.principal_angles.empty());
  EXPECT_TRUE(to_json(g)["mean_cos2"].is_null());
  EXPECT_NE(agreement_text(g).find("pass --k K"), std::string::npos) << agreement_text(g);
}

TEST(Agreement, ShapeMismatchAndBadTablesNameBoth) {
  std::string msg = error_of([] { table_agreement(gaussian({64, 32}, 1), gaussian({48, 32}, 2), "a.npy", "b.npy"); });
  EXPECT_NE(msg.find("a.npy is (64, 32) and b.npy is (48, 32)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--rows"), std::string::npos) << msg;
  msg = error_of([] { table_agreement(torch::ones({16, 8}, torch::kFloat64), gaussian({16, 8}, 2), "flat", "b"); });
  EXPECT_NE(msg.find("flat: every row is the same"), std::string::npos) << msg;
  auto nan = gaussian({16, 8}, 3);
  nan[2][2] = NAN;
  msg = error_of([&] { table_agreement(gaussian({16, 8}, 2), nan, "a", "diverged.npy"); });
  EXPECT_NE(msg.find("diverged.npy: holds NaN"), std::string::npos) << msg;
  msg = error_of([] { table_agreement(gaussian({16, 8}, 1), gaussian({16, 8}, 2), "a", "b", 9); });
  EXPECT_NE(msg.find("at most 8"), std::string::npos) << msg;
}

// Real tables of the default run, seeds 1 and 2, against NumPy (scripts/agreement_numpy.py).
TEST(Agreement, MatchesNumPyOnTwoSeedsOfTheDefaultRun) {
  std::ifstream in(agreement_fixture("agreement_numpy.json"));
  const auto expected = nlohmann::json::parse(in);
  const auto s1 = read_npy_table(agreement_fixture("runs/default_float32_seed1/wpe_step001500.npy"));
  const auto s1_800 = read_npy_table(agreement_fixture("runs/default_float32_seed1/wpe_step000800.npy"));
  const auto s2 = read_npy_table(agreement_fixture("runs/default_float32_seed2/wpe_step001500.npy"));
  for (const auto& [name, A, B] :
       {std::tuple{"seed1_vs_seed2_step1500", s1, s2}, std::tuple{"seed1_step800_vs_step1500", s1_800, s1}}) {
    const auto& e = expected.at(name);
    const Agreement g = table_agreement(A, B, "A", "B", e.at("k").get<int>());
    EXPECT_NEAR(g.cka, e.at("cka").get<double>(), 1e-9) << name;
    EXPECT_NEAR(g.procrustes_residual, e.at("procrustes_residual").get<double>(), 1e-7) << name;
    EXPECT_NEAR(g.similarity_correlation, e.at("similarity_correlation").get<double>(), 1e-9) << name;
    const auto angles = e.at("principal_angles_degrees").get<std::vector<double>>();
    ASSERT_EQ(g.principal_angles.size(), angles.size()) << name;
    for (size_t i = 0; i < angles.size(); ++i) EXPECT_NEAR(g.principal_angles[i], angles[i], 1e-5) << name << " " << i;
  }
  // Two seeds learn nearly the same geometry: far above what independent tables of the shape give.
  const Agreement g = table_agreement(s1, s2, "seed 1", "seed 2");
  EXPECT_GT(g.cka, 0.9);
  EXPECT_GT(g.cka, g.cka_random + 0.3);
  EXPECT_GT(g.k, 0);
}

}  // namespace
}  // namespace poslab
