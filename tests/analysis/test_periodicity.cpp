// Periods, circles, the helix, translation invariance and monotonicity (analysis/periodicity.h) on curves and
// matrices of known answer: integer and non-integer periods, a planted circle and helix, a line, noise, Toeplitz,
// shuffled and random similarity matrices, and brute-force references written out here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "analysis/periodicity.h"

using namespace poslab;

namespace {

constexpr int kP = 128;

std::vector<double> wave(double period, double phase = 0, int P = kP) {
  std::vector<double> x(P);
  for (int p = 0; p < P; ++p) x[p] = std::cos(2 * M_PI * p / period + phase);
  return x;
}

std::vector<double> ramp_table(int P = kP) {
  std::vector<double> x(P);
  for (int p = 0; p < P; ++p) x[p] = p - (P - 1) / 2.0;
  return x;
}

std::vector<double> noise(uint32_t seed, int P = kP) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n;
  std::vector<double> x(P);
  for (double& v : x) v = n(rng);
  return x;
}

// A symmetric (P, P) matrix with unit diagonal from f(i, j), i < j.
template <typename F>
std::vector<double> matrix(int P, F f) {
  std::vector<double> C(static_cast<size_t>(P * P), 1.0);
  for (int i = 0; i < P; ++i)
    for (int j = i + 1; j < P; ++j) C[i * P + j] = C[j * P + i] = f(i, j);
  return C;
}

}  // namespace

TEST(Periodicity, PowerSpectrumOfAWaveIsOneBin) {
  const std::vector<double> power = power_spectrum(wave(16));  // 8 cycles over 128 positions
  ASSERT_EQ(power.size(), kP / 2 + 1u);
  for (size_t f = 0; f < power.size(); ++f) EXPECT_NEAR(power[f], f == 8 ? kP * kP / 4.0 : 0.0, 1e-6) << "bin " << f;
  EXPECT_NEAR(dtft_power(wave(16), 8.0), power[8], 1e-6);
}

TEST(Periodicity, IntegerPeriodsAreExact) {
  for (double period : {64.0, 16.0, 4.0}) {
    const CurvePeriod c = curve_period(wave(period, 0.3));
    EXPECT_NEAR(c.period, period, 1e-6 * period);
    EXPECT_NEAR(c.power_share, 1.0, 1e-9) << period;
    EXPECT_LT(c.spectral_entropy, 1e-6) << period;
  }
}

TEST(Periodicity, PeriodsBetweenBinsAreFound) {
  for (double period : {10.7, 23.3, 37.9}) {
    const CurvePeriod c = curve_period(wave(period, 1.1));
    EXPECT_NEAR(c.period / period, 1.0, 1e-6) << period;  // the least-squares peak of a pure wave is its own
    EXPECT_LT(c.power_share, 1.0) << period;              // the power leaks into the neighbouring bins
  }
}

TEST(Periodicity, ACentredWaveOfAFewFractionalTurnsKeepsItsPeriod) {
  // A principal component's curve is centred; a wave of a fractional number of turns is then a sinusoid plus a
  // constant. 0.7 turns over 128 positions is a period of 182.86 (a fit without the constant read 133.6).
  for (double turns : {0.7, 1.3, 2.6}) {
    std::vector<double> x = wave(kP / turns, 1.05);
    const double mean = std::accumulate(x.begin(), x.end(), 0.0) / kP;
    for (double& v : x) v -= mean;
    EXPECT_NEAR(curve_period(x).period / (kP / turns), 1.0, 1e-6) << turns << " turns";
  }
}

TEST(Periodicity, NoiseHasNoPeakAndHighEntropy) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const CurvePeriod c = curve_period(noise(seed));
    EXPECT_LT(c.power_share, 0.15) << seed;
    EXPECT_GT(c.spectral_entropy, 0.8) << seed;
  }
  const CurvePeriod flat = curve_period(std::vector<double>(kP, 2.0));
  EXPECT_EQ(flat.period, 0.0);
  EXPECT_EQ(flat.power_share, 0.0);
}

TEST(Periodicity, APlantedCircleIsFoundWithItsPeriod) {
  // components: a ramp (1), cos and sin at a period of 10.7 (2, 3), noise (4)
  const std::vector<std::vector<double>> curves = {ramp_table(), wave(10.7), wave(10.7, -M_PI / 2), noise(7)};
  const std::vector<double> explained = {0.4, 0.25, 0.25, 0.1};
  std::vector<CurvePeriod> periods;
  for (const auto& c : curves) periods.push_back(curve_period(c));
  const std::vector<Circle> circles = find_circles(curves, explained, periods);
  ASSERT_EQ(circles.size(), 1u);
  EXPECT_EQ(circles[0].first, 2);
  EXPECT_EQ(circles[0].second, 3);
  EXPECT_NEAR(circles[0].period, 10.7, 1e-3);
  EXPECT_NEAR(circles[0].explained, 0.5, 1e-12);
  EXPECT_GT(circles[0].concentration, 0.99);
  EXPECT_GT(circles[0].circularity, 0.99);
  const std::optional<Helix> helix = find_helix(circles, explained, periods);
  ASSERT_TRUE(helix.has_value());
  EXPECT_EQ(helix->slow, 1);
  EXPECT_GT(helix->slow_period, kP);  // less than one cycle over the table
  EXPECT_NEAR(helix->explained, 0.9, 1e-12);
}

TEST(Periodicity, ALineNoiseOrTwoPeriodsAreNoCircle) {
  auto circles_of = [](const std::vector<std::vector<double>>& curves) {
    std::vector<CurvePeriod> periods;
    for (const auto& c : curves) periods.push_back(curve_period(c));
    return find_circles(curves, std::vector<double>(curves.size(), 0.1), periods);
  };
  EXPECT_TRUE(circles_of({wave(16), wave(16)}).empty());  // in phase: back and forth on a line
  EXPECT_TRUE(circles_of({noise(1), noise(2), noise(3), noise(4)}).empty());
  EXPECT_TRUE(circles_of({wave(16), wave(32, M_PI / 2)}).empty());    // quadrature, but two periods
  EXPECT_TRUE(circles_of({wave(256), wave(256, M_PI / 2)}).empty());  // half a turn: an arc
}

TEST(Periodicity, ACircleWithoutASlowAxisIsNoHelix) {
  const std::vector<std::vector<double>> curves = {wave(10.7), wave(10.7, -M_PI / 2), wave(8)};
  std::vector<CurvePeriod> periods;
  for (const auto& c : curves) periods.push_back(curve_period(c));
  const std::vector<double> explained = {0.4, 0.4, 0.2};
  const std::vector<Circle> circles = find_circles(curves, explained, periods);
  ASSERT_EQ(circles.size(), 1u);
  EXPECT_FALSE(find_helix(circles, explained, periods).has_value());
  EXPECT_FALSE(find_helix({}, explained, periods).has_value());
}

TEST(Periodicity, TranslationInvarianceOfToeplitzShuffledAndRandomMatrices) {
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

TEST(Periodicity, MonotonicityOfFallingRisingRandomAndFlatMatrices) {
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
TEST(Periodicity, MonotonicityEqualsTheCountOfEveryTriple) {
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
