// Known answers for the noise floor (analysis/noise_floor.h) and the shuffled-copies control: planted low-rank
// signals in Gaussian noise at square, tall and wide shapes, pure noise, and a NumPy computation of the same rule.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

#include "analysis/analysis.h"
#include "analysis/baselines.h"
#include "analysis/noise_floor.h"
#include "analysis/table_io.h"
#include "source_paths.h"

namespace poslab {
namespace {

constexpr double kNoiseStd = 0.02;

// A rank-r signal with singular values x_k·√n·σ (x_k = strength·(1 + k/3)), its row space orthogonal to the constant
// vector (so centring keeps it). n = max(P − 1, d).
torch::Tensor planted_signal(int64_t P, int64_t d, int64_t r, double strength, uint64_t seed) {
  torch::manual_seed(seed);
  const double n = static_cast<double>(std::max(P - 1, d));
  auto U = torch::randn({P, r}, torch::kFloat64);
  U = std::get<0>(torch::linalg_qr(U - U.mean(0, true)));  // (P, r) orthonormal, columns sum to 0
  auto V = std::get<0>(torch::linalg_qr(torch::randn({d, r}, torch::kFloat64)));               // (d, r)
  auto S = (torch::arange(r, torch::kFloat64) / 3 + 1) * strength * std::sqrt(n) * kNoiseStd;  // (r,)
  return (U * S).matmul(V.transpose(0, 1));                                                    // (P, d)
}

// The signal plus N(0, σ²) noise.
torch::Tensor noisy_planted(int64_t P, int64_t d, int64_t r, double strength, uint64_t seed) {
  return planted_signal(P, d, r, strength, seed) + random_table(P, d, kNoiseStd, seed + 100);
}

TEST(NoiseFloor, ThresholdCoefficientMatchesGavishDonoho) {
  // Their paper's value for square matrices, ω(1) ≈ 2.858, and their cubic fit, within 0.01 for β ≥ 0.05.
  EXPECT_NEAR(optimal_threshold_coefficient(1.0), 2.858, 1e-3);
  EXPECT_NEAR(optimal_threshold_known_noise(1.0), 4 / std::sqrt(3.0), 1e-12);  // "4/√3"
  for (double b : {0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0}) {
    const double fit = 0.56 * b * b * b - 0.95 * b * b + 1.82 * b + 1.43;
    EXPECT_NEAR(optimal_threshold_coefficient(b), fit, 0.01) << "beta " << b;
  }
  EXPECT_THROW(marchenko_pastur_median(0.0), std::invalid_argument);
  EXPECT_THROW(marchenko_pastur_median(1.5), std::invalid_argument);
}

TEST(NoiseFloor, MarchenkoPasturMedianMatchesALargeRandomMatrix) {
  // The median eigenvalue of X Xᵀ / n for a 300 × 600 Gaussian X is μ_β (β = 0.5) up to finite-size error.
  torch::manual_seed(5);
  auto X = torch::randn({300, 600}, torch::kFloat64);
  auto eig = torch::linalg_svdvals(X).pow(2) / 600;
  EXPECT_NEAR(eig.median().item<double>(), marchenko_pastur_median(0.5), 0.01);
  torch::manual_seed(6);
  X = torch::randn({400, 400}, torch::kFloat64);
  EXPECT_NEAR((torch::linalg_svdvals(X).pow(2) / 400).median().item<double>(), marchenko_pastur_median(1.0), 0.01);
}

// (P, d): square, tall and wide, from 64 to 1024 positions.
const std::vector<std::pair<int64_t, int64_t>> kShapes = {{64, 64},  {128, 128}, {256, 64},
                                                          {64, 256}, {1024, 96}, {48, 1024}};

TEST(NoiseFloor, PlantedSignalAboveTheDetectionLimitIsRecovered) {
  for (const auto& [P, d] : kShapes)
    for (int64_t r : {1, 3, 6}) {
      const auto seed = static_cast<uint64_t>(P * 7 + d + r);
      const torch::Tensor signal = planted_signal(P, d, r, 3.0, seed);
      const torch::Tensor W = signal + random_table(P, d, kNoiseStd, seed + 100);
      const Analysis a = analyze_table(W, "planted");
      EXPECT_EQ(a.noise.signal_rank, r) << P << "x" << d << " rank " << r;
      EXPECT_NEAR(a.noise.noise_sigma, kNoiseStd, 0.1 * kNoiseStd)
          << P << "x" << d;  // the median counts the signal too
      // The share above the floor is the signal's share of the variance, plus the noise along its directions.
      const double oracle = signal.pow(2).sum().item<double>() / (W - W.mean(0, true)).pow(2).sum().item<double>();
      EXPECT_GE(a.noise.signal_share, oracle - 0.02) << P << "x" << d << " rank " << r;
      EXPECT_LE(a.noise.signal_share, oracle + 0.08) << P << "x" << d << " rank " << r;
    }
}

TEST(NoiseFloor, PureNoiseAndSignalBelowTheDetectionLimitGiveNothing) {
  for (const auto& [P, d] : kShapes) {
    for (uint64_t seed : {1, 2, 3}) {
      const Analysis a = analyze_table(random_table(P, d, kNoiseStd, seed), "noise");
      EXPECT_EQ(a.noise.signal_rank, 0) << P << "x" << d << " seed " << seed;
      EXPECT_EQ(a.noise.signal_share, 0.0);
      EXPECT_NEAR(a.noise.noise_sigma, kNoiseStd, 0.05 * kNoiseStd) << P << "x" << d;
    }
    // x = 0.5 < β^¼: the signal's singular value sinks into the noise bulk, and no rule can see it.
    EXPECT_EQ(analyze_table(noisy_planted(P, d, 2, 0.3, 9), "weak").noise.signal_rank, 0) << P << "x" << d;
  }
  // The floor scales with the table: the same noise ×1000 still has none above it.
  EXPECT_EQ(analyze_table(random_table(128, 128, 20.0, 4), "loud noise").noise.signal_rank, 0);
  // A zero table has no variance to share.
  const Analysis z = analyze_table(torch::zeros({16, 8}), "zeros");
  EXPECT_EQ(z.noise.signal_rank, 0);
  EXPECT_EQ(z.noise.signal_share, 0.0);
}

TEST(NoiseFloor, ASignalWithoutNoiseCountsItsOwnRankNotItsRounding) {
  // No noise bulk: the singular values beyond the rank are float32's rounding (~1e-8 of σ_1), not signal.
  for (const auto& [P, d] : kShapes)
    for (int64_t r : {1, 2, 3}) {
      const torch::Tensor W = planted_signal(P, d, r, 3.0, static_cast<uint64_t>(P + d + r)).to(torch::kFloat32);
      const NoiseFloor nf = analyze_table(W, "clean").noise;
      EXPECT_EQ(nf.signal_rank, r) << P << "x" << d << " rank " << r;
      EXPECT_TRUE(nf.rounding_floor) << P << "x" << d << " rank " << r;
      EXPECT_FALSE(analyze_table(noisy_planted(P, d, r, 3.0, 5), "noisy").noise.rounding_floor) << P << "x" << d;
    }
}

TEST(NoiseFloor, ALongTableWhoseSignalFillsEveryColumnIsAllSignal) {
  // The sinusoidal table at 1,024 × 64 has no noise bulk: its median σ is a signal's, and the median's estimate
  // alone put the floor inside the signal (3 components, 25 % of the variance). The smallest σ bounds the noise.
  for (const auto& [P, d] : std::vector<std::pair<int64_t, int64_t>>{{1024, 64}, {1024, 32}, {200, 16}}) {
    const torch::Tensor clean = synthetic_table("sinusoidal", P, d, 0);
    const NoiseFloor nf = analyze_table(clean, "clean").noise;
    EXPECT_TRUE(nf.smallest_decides) << P << "x" << d;
    EXPECT_TRUE(nf.rounding_floor) << P << "x" << d;
    EXPECT_GT(nf.signal_share, 1 - 1e-9) << P << "x" << d;
    EXPECT_GE(nf.signal_rank, d / 2) << P << "x" << d;
    // With N(0, 0.02²) noise: the bound is at most twice the noise, and the signal still holds nearly all.
    const NoiseFloor noisy = analyze_table(clean + random_table(P, d, kNoiseStd, 3), "noisy").noise;
    EXPECT_TRUE(noisy.smallest_decides) << P << "x" << d;
    EXPECT_FALSE(noisy.rounding_floor) << P << "x" << d;
    EXPECT_GE(noisy.noise_sigma, kNoiseStd) << P << "x" << d;
    EXPECT_LE(noisy.noise_sigma, 2.5 * kNoiseStd) << P << "x" << d;
    EXPECT_GT(noisy.signal_share, 0.99) << P << "x" << d;
  }
  // Where β > 1/4 the lower edge is too near 0 to bound anything: the median alone decides.
  const NoiseFloor square = analyze_table(synthetic_table("sinusoidal", 128, 64, 0), "square").noise;
  EXPECT_FALSE(std::isfinite(square.smallest_bound));
  EXPECT_FALSE(square.smallest_decides);
}

TEST(NoiseFloor, TheSmallestSingularValueNeverDecidesForNoise) {
  // For noise the smallest's bound is about twice the median's estimate; over 200 Gaussian tables at the smallest
  // shapes where it applies (m = 8 and 16, β = 1/4) it never decides (the
  // median's own misses at m = 8, about 1 table in 500, are docs/analysis.md's).
  for (const auto& [P, d] : std::vector<std::pair<int64_t, int64_t>>{{33, 8}, {65, 16}, {9, 33}})
    for (uint64_t seed = 0; seed < 200; ++seed) {
      const torch::Tensor W = random_table(P, d, kNoiseStd, seed);
      const torch::Tensor sv = torch::linalg_svdvals(W - W.mean(0, true)).contiguous();
      const NoiseFloor nf =
          noise_floor(std::vector<double>(sv.data_ptr<double>(), sv.data_ptr<double>() + sv.numel()), P, d);
      ASSERT_TRUE(std::isfinite(nf.smallest_bound)) << P << "x" << d;
      EXPECT_GT(nf.smallest_bound, 1.2 * nf.noise_sigma) << P << "x" << d << " seed " << seed;
      EXPECT_FALSE(nf.smallest_decides) << P << "x" << d << " seed " << seed;
    }
}

TEST(NoiseFloor, AgreesWithNumPy) {
  const std::string dir = poslab::test::source_dir() + "/tests/fixtures/";
  std::ifstream in(dir + "noise_floor_numpy.json");
  ASSERT_TRUE(in) << "missing " << dir << "noise_floor_numpy.json (scripts/noise_floor_numpy.py writes it)";
  const auto j = nlohmann::json::parse(in);
  for (const auto& [name, rows, expect] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"planted_rank3_96x40.npy", ":", "planted_rank3_96x40.npy"},
           {"gpt2_wpe_rows0-63.npy", "1:64", "gpt2_wpe_rows0-63.npy[1:64]"},
           {"sinusoidal_noisy_200x16.npy", ":", "sinusoidal_noisy_200x16.npy"}}) {
    const torch::Tensor W = select_rows(read_npy_table(dir + name), rows);
    const NoiseFloor nf = analyze_table(W, name).noise;
    const auto& e = j["tables"][expect];
    ASSERT_FALSE(e.is_null()) << expect;
    EXPECT_NEAR(nf.beta, e["beta"].get<double>(), 1e-12) << name;
    EXPECT_NEAR(marchenko_pastur_median(nf.beta), e["mp_median"].get<double>(), 1e-7) << name;
    EXPECT_NEAR(nf.omega, e["omega"].get<double>(), 1e-6) << name;
    EXPECT_NEAR(nf.threshold / e["threshold"].get<double>(), 1.0, 1e-6) << name;
    EXPECT_NEAR(nf.noise_sigma / e["noise_sigma"].get<double>(), 1.0, 1e-6) << name;
    EXPECT_EQ(nf.smallest_decides, e["smallest_decides"].get<bool>()) << name;
    EXPECT_EQ(nf.signal_rank, e["signal_rank"].get<int>()) << name;
    EXPECT_NEAR(nf.signal_share, e["signal_share"].get<double>(), 1e-9) << name;
  }
}

TEST(ShuffleControl, MatchesShuffledCopiesComputedOneByOne) {
  const torch::Tensor W = handbook_table(40, 12, 3);
  AnalysisOptions opt;
  opt.shuffle_copies = 7;
  const Analysis a = analyze_table(W, "h", opt);
  std::vector<double> values;
  for (int k = 0; k < 7; ++k) values.push_back(smoothness(shuffle_rows(W, opt.shuffle_seed + k)).adjacent_cosine);
  double mean = 0, var = 0;
  for (double v : values) mean += v / 7;
  for (double v : values) var += (v - mean) * (v - mean) / 6;
  EXPECT_NEAR(a.shuffle_control.mean, mean, 1e-12);
  EXPECT_NEAR(a.shuffle_control.sd, std::sqrt(var), 1e-12);
  EXPECT_NEAR(a.shuffle_control.z, (a.smooth.adjacent_cosine - mean) / std::sqrt(var), 1e-9);
  EXPECT_EQ(a.shuffle_control.copies, 7);
  // Copy 0 is the shuffled copy of the smoothness control.
  EXPECT_NEAR(values[0], a.shuffled.adjacent_cosine, 1e-12);
  // Noise has no order: its z is small; a smooth table's is large.
  EXPECT_LT(std::abs(analyze_table(random_table(128, 64, 0.02, 8), "noise").shuffle_control.z), 4.0);
  EXPECT_GT(a.shuffle_control.z, 10.0);
}

}  // namespace
}  // namespace poslab
