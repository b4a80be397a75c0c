// Periods, circles and the helix (analysis/periodicity.h) on curves of known answer: integer and non-integer
// periods, a planted circle and helix, a helix mixed among its components, a line, noise.
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

// cos and sin at a period of 10.7 and a third curve, each of variance ½, turned by 60° about (1, 1, 1): components of
// equal variance come out of a PCA mixed like this, none of them the third curve alone.
std::vector<std::vector<double>> mixed(const std::vector<double>& third) {
  std::vector<std::vector<double>> source = {wave(10.7), wave(10.7, -M_PI / 2), third};
  for (auto& x : source) {
    const double mean = std::accumulate(x.begin(), x.end(), 0.0) / kP;
    double sq = 0;
    for (double& v : x) v -= mean, sq += v * v;
    for (double& v : x) v *= std::sqrt(0.5 * kP / sq);
  }
  const double t = 60 * M_PI / 180, c = std::cos(t), s = std::sin(t), n = 1 / std::sqrt(3.0);
  // Rodrigues: R = c I + s [n]× + (1 − c) n nᵀ
  const double R[3][3] = {{c + (1 - c) * n * n, -s * n + (1 - c) * n * n, s * n + (1 - c) * n * n},
                          {s * n + (1 - c) * n * n, c + (1 - c) * n * n, -s * n + (1 - c) * n * n},
                          {-s * n + (1 - c) * n * n, s * n + (1 - c) * n * n, c + (1 - c) * n * n}};
  std::vector<std::vector<double>> out(3, std::vector<double>(kP, 0.0));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int p = 0; p < kP; ++p) out[i][p] += R[i][j] * source[j][p];
  return out;
}

double correlation(const std::vector<double>& x, const std::vector<double>& y) {
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / x.size();
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / y.size();
  double xy = 0, xx = 0, yy = 0;
  for (size_t p = 0; p < x.size(); ++p)
    xy += (x[p] - mx) * (y[p] - my), xx += (x[p] - mx) * (x[p] - mx), yy += (y[p] - my) * (y[p] - my);
  return xy / std::sqrt(xx * yy);
}

// R² of y's least-squares fit by a + b·u + c·v.
double fit_r2(const std::vector<double>& y, std::vector<double> u, std::vector<double> v) {
  auto centre = [](std::vector<double>& x) {
    const double m = std::accumulate(x.begin(), x.end(), 0.0) / x.size();
    for (double& e : x) e -= m;
  };
  std::vector<double> yc = y;
  centre(yc), centre(u), centre(v);
  auto dot = [](const std::vector<double>& a, const std::vector<double>& b) {
    return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
  };
  const double uu = dot(u, u), vv = dot(v, v), uv = dot(u, v), uy = dot(u, yc), vy = dot(v, yc);
  const double det = uu * vv - uv * uv, b = (vv * uy - uv * vy) / det, c = (uu * vy - uv * uy) / det;
  return (b * uy + c * vy) / dot(yc, yc);  // the fit's energy over y's
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

// The period is the frequency of most sinusoid energy within half a bin of the peak bin, whatever else rises in that
// interval: on a few rows a bin is wide and may hold two maxima (a golden-section search over it can settle on the
// lesser), so noise curves of 4 to 16 rows are checked against a fine grid of it.
TEST(Periodicity, ThePeriodIsTheBestFitWithinHalfABin) {
  std::mt19937 rng(7);
  std::normal_distribution<double> n01;
  int checked = 0;
  for (int P = 4; P <= 16; ++P)
    for (int draw = 0; draw < 20; ++draw) {
      std::vector<double> x(static_cast<size_t>(P));
      for (double& v : x) v = n01(rng);
      const double mean = std::accumulate(x.begin(), x.end(), 0.0) / P;
      for (double& v : x) v -= mean;  // a principal component's curve is centred
      const std::vector<double> power = power_spectrum(x);
      size_t peak = 1;
      for (size_t f = 2; f < power.size(); ++f)
        if (power[f] > power[peak]) peak = f;
      const double lo = std::max(0.5, peak - 0.5), hi = std::min(P / 2.0, peak + 0.5);
      double best = 0;
      for (int i = 0; i <= 4000; ++i) best = std::max(best, sinusoid_energy(x, lo + (hi - lo) * i / 4000));
      const CurvePeriod c = curve_period(x);
      EXPECT_GE(sinusoid_energy(x, c.frequency), best * (1 - 1e-6))
          << P << " rows, draw " << draw << ": period " << c.period;
      ++checked;
    }
  EXPECT_EQ(checked, 13 * 20);
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

TEST(Periodicity, TheSlowShareIsTheVarianceInHalfACycleAndOneCycle) {
  auto cosine = [](double k, double scale, double offset) {
    std::vector<double> x(kP);
    for (int p = 0; p < kP; ++p) x[p] = offset + scale * std::cos(M_PI * k * (p + 0.5) / kP);
    return x;
  };
  EXPECT_NEAR(curve_period(cosine(1, 3.0, 5.0)).slow_share, 1.0, 1e-12);   // half a cycle, whatever its scale
  EXPECT_NEAR(curve_period(cosine(2, 0.1, -1.0)).slow_share, 1.0, 1e-12);  // one cycle
  EXPECT_NEAR(curve_period(cosine(3, 1.0, 0.0)).slow_share, 0.0, 1e-12);   // a cycle and a half: none
  // A ramp's cosine coefficients fall as 1/k² at odd k: Σ over odd k of k⁻⁴ is π⁴/96, so k = 1 holds 96/π⁴.
  EXPECT_NEAR(curve_period(ramp_table()).slow_share, 96 / std::pow(M_PI, 4), 1e-4);
  for (uint32_t seed : {1u, 2u, 3u}) EXPECT_LT(curve_period(noise(seed)).slow_share, 0.1) << seed;  // about 2/P
  EXPECT_EQ(curve_period(std::vector<double>(kP, 2.0)).slow_share, 0.0);
}

// Trained tables' ramps are not straight: their power leaks from the peak bin, their variance stays slow.
TEST(Periodicity, ABentRampIsASlowAxis) {
  std::vector<double> log_ramp(kP), cube(kP);
  for (int p = 0; p < kP; ++p) {
    log_ramp[p] = std::log(p + 1.0);
    cube[p] = std::pow(2.0 * p / (kP - 1) - 1, 3);  // flat in the middle: its peak at 2 cycles
  }
  for (const auto& bent : {log_ramp, cube}) {
    const std::vector<std::vector<double>> curves = {bent, wave(10.7), wave(10.7, -M_PI / 2), noise(7)};
    const std::vector<double> explained = {0.4, 0.25, 0.25, 0.1};
    std::vector<CurvePeriod> periods;
    for (const auto& c : curves) periods.push_back(curve_period(c));
    EXPECT_LT(periods[0].power_share, 0.5);
    EXPECT_GT(periods[0].slow_share, 0.7);
    const std::vector<Circle> circles = find_circles(curves, explained, periods);
    ASSERT_EQ(circles.size(), 1u);
    const std::optional<Helix> helix = find_helix(circles, curves, explained, periods);
    ASSERT_TRUE(helix.has_value());
    EXPECT_FALSE(helix->rotated);
    EXPECT_EQ(helix->slow, 1);
  }
}

// A ramp flat in the middle (u³) peaks at 2 cycles: beside a circle of 2 turns it pairs with either coordinate, a
// "circle" of more variance than the real one. A pair with a ramp (slow_share ≥ ½ beside 1.75 turns or more) gives way
// to the pair without one, and the ramp is the helix's slow axis. Below 1.75 turns a circle's own coordinate can be as
// slow, and the rule leaves it be.
TEST(Periodicity, ARampPeakingAtTheCirclesFrequencyIsItsSlowAxisNotItsCoordinate) {
  std::vector<double> cube(kP);
  for (int p = 0; p < kP; ++p) cube[p] = 2 * std::pow(2.0 * p / (kP - 1) - 1, 3);
  const std::vector<std::vector<double>> curves = {cube, wave(kP / 2.0), wave(kP / 2.0, -M_PI / 2)};
  const std::vector<double> explained = {0.5, 0.25, 0.25};
  std::vector<CurvePeriod> periods;
  for (const auto& c : curves) periods.push_back(curve_period(c));
  EXPECT_NEAR(periods[0].frequency, 2.0, 0.5);  // its peak at the circle's frequency
  EXPECT_GT(periods[0].slow_share, 0.5);
  EXPECT_LT(periods[1].slow_share, 0.17);
  EXPECT_LT(periods[2].slow_share, 0.17);
  const std::vector<Circle> circles = find_circles(curves, explained, periods);
  ASSERT_EQ(circles.size(), 1u);
  EXPECT_EQ(circles[0].first, 2);
  EXPECT_EQ(circles[0].second, 3);
  EXPECT_NEAR(circles[0].period, kP / 2.0, 0.5);
  const std::optional<Helix> helix = find_helix(circles, curves, explained, periods);
  ASSERT_TRUE(helix.has_value());
  EXPECT_EQ(helix->slow, 1);

  // 1.5 turns: sin holds 64 % of its variance in the slowest cosines, a coordinate all the same. Beside it a weak wave
  // 30° off sin (49 %, no ramp) also pairs with cos; were sin taken for a ramp, that pair would win.
  const double T = kP / 1.5;
  const std::vector<std::vector<double>> slow_circle = {wave(T, -M_PI / 2), wave(T), wave(T, -M_PI / 3)};
  std::vector<CurvePeriod> slow_periods;
  for (const auto& c : slow_circle) slow_periods.push_back(curve_period(c));
  EXPECT_GT(slow_periods[0].slow_share, 0.6);
  EXPECT_LT(slow_periods[2].slow_share, 0.5);
  EXPECT_EQ(find_circles({slow_circle[1], slow_circle[2]}, {0.45, 0.05}, {slow_periods[1], slow_periods[2]}).size(),
            1u);  // the weak wave and cos: a circle on their own
  const std::vector<Circle> turn = find_circles(slow_circle, {0.45, 0.45, 0.05}, slow_periods);
  ASSERT_EQ(turn.size(), 1u);
  EXPECT_EQ(turn[0].first, 1);
  EXPECT_EQ(turn[0].second, 2);
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
  const std::optional<Helix> helix = find_helix(circles, curves, explained, periods);
  ASSERT_TRUE(helix.has_value());
  EXPECT_FALSE(helix->rotated);  // a slow component of its own: nothing to turn
  EXPECT_TRUE(helix->curves.empty());
  EXPECT_EQ(helix->slow, 1);
  EXPECT_GT(helix->slow_period, kP);  // less than one cycle over the table
  EXPECT_NEAR(helix->explained, 0.9, 1e-12);
}

TEST(Periodicity, ACircleOfAboutOneTurnKeepsItsPeriod) {
  // Principal components are centred, and a wave of a fractional number of turns is not: the circle's frequency is
  // the best fit of a constant, a cosine and a sine to each coordinate, exact between bins as the periods are.
  for (double period : {140.0, 100.0, 64.0, 50.0, 40.0}) {
    std::vector<std::vector<double>> curves = {wave(period), wave(period, -M_PI / 2)};
    for (auto& c : curves) {
      const double mean = std::accumulate(c.begin(), c.end(), 0.0) / kP;
      for (double& v : c) v -= mean;
    }
    std::vector<CurvePeriod> periods;
    for (const auto& c : curves) periods.push_back(curve_period(c));
    const std::vector<Circle> circles = find_circles(curves, {0.5, 0.5}, periods);
    ASSERT_EQ(circles.size(), 1u) << "period " << period;
    EXPECT_NEAR(circles[0].period / period, 1.0, 1e-4) << "period " << period;
  }
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
  EXPECT_FALSE(find_helix(circles, curves, explained, periods).has_value());
  EXPECT_FALSE(find_helix({}, curves, explained, periods).has_value());
}

TEST(Periodicity, AHelixMixedAmongItsComponentsIsTurnedApart) {
  const std::vector<std::vector<double>> curves = mixed(ramp_table());
  std::vector<CurvePeriod> periods;
  for (const auto& c : curves) periods.push_back(curve_period(c));
  const std::vector<double> explained = {0.33, 0.33, 0.33};
  const std::vector<Circle> circles = find_circles(curves, explained, periods);
  ASSERT_EQ(circles.size(), 1u);
  for (size_t k = 0; k < curves.size(); ++k) {  // no component on its own is slow
    if (static_cast<int>(k + 1) == circles[0].first || static_cast<int>(k + 1) == circles[0].second) continue;
    EXPECT_LT(periods[k].slow_share, kSlowShare) << "component " << k + 1;
  }
  const std::optional<Helix> helix = find_helix(circles, curves, explained, periods);
  ASSERT_TRUE(helix.has_value());
  EXPECT_TRUE(helix->rotated);
  EXPECT_EQ(helix->circle.first, circles[0].first);
  EXPECT_EQ(helix->circle.second, circles[0].second);
  EXPECT_NEAR(helix->circle.period, 10.7, 0.01);
  EXPECT_GT(helix->circle.circularity, 0.99);
  EXPECT_GT(helix->slow_period, kP);
  EXPECT_NEAR(helix->explained, 0.99, 1e-9);         // the three axes hold what the three held
  EXPECT_NEAR(helix->circle.explained, 0.66, 0.01);  // two of them
  ASSERT_EQ(helix->curves.size(), 3u);
  EXPECT_GT(std::abs(correlation(helix->curves[2], ramp_table())), 0.999);  // the slow axis is the ramp
  for (int r = 0; r < 2; ++r)  // and the circle's axes lie in the plane of cos and sin: R² of their fit ≈ 1
    EXPECT_GT(fit_r2(helix->curves[r], wave(10.7), wave(10.7, -M_PI / 2)), 0.9999) << "axis " << r;
  for (int r = 0; r < 3; ++r) {  // orthonormal axes
    for (int q = 0; q < 3; ++q) {
      double dot = 0;
      for (int i = 0; i < 3; ++i) dot += helix->axes[r][i] * helix->axes[q][i];
      EXPECT_NEAR(dot, r == q ? 1.0 : 0.0, 1e-9) << r << " " << q;
    }
  }
}

// Components of far different variance do not mix in a PCA: a third far weaker (or stronger) than the circle's
// coordinates is not turned with them, however slow the turn would make it.
TEST(Periodicity, OnlyAComponentOfAboutACircleCoordinatesVarianceIsTurnedWithIt) {
  const std::vector<std::vector<double>> curves = mixed(ramp_table());
  std::vector<CurvePeriod> periods;
  for (const auto& c : curves) periods.push_back(curve_period(c));
  Circle c;
  c.first = 1, c.second = 2, c.frequency = kP / 10.7, c.period = 10.7, c.explained = 0.66;
  // a coordinate holds 0.33: the third turned from 0.33 / 3 to 3 × 0.33, not beyond
  for (double third : {0.12, 0.33, 0.9}) EXPECT_TRUE(find_helix({c}, curves, {0.33, 0.33, third}, periods)) << third;
  for (double third : {0.1, 1.0}) EXPECT_FALSE(find_helix({c}, curves, {0.33, 0.33, third}, periods)) << third;
}

TEST(Periodicity, ACircleMixedWithAFastOrNoisyThirdIsNoHelix) {
  for (const std::vector<double>& third : {wave(5.0), noise(11)}) {
    const std::vector<std::vector<double>> curves = mixed(third);
    std::vector<CurvePeriod> periods;
    for (const auto& c : curves) periods.push_back(curve_period(c));
    const std::vector<double> explained = {0.33, 0.33, 0.33};
    // the circle given: the mixing can hide it from find_circles, and the helix rule starts from one
    Circle c;
    c.first = 1, c.second = 2, c.frequency = kP / 10.7, c.period = 10.7, c.explained = 0.66;
    EXPECT_FALSE(find_helix({c}, curves, explained, periods).has_value());
  }
}
