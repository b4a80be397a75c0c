// Interpolability metrics against known answers and direct computations.
#include <gtest/gtest.h>

#include <complex>

#include "analysis/analysis.h"
#include "analysis/metric_list.h"
#include "analysis/table_io.h"
#include "source_paths.h"

using namespace poslab;

namespace {

// The rebuilt rows of a table as the definition reads: keep 0, s, 2s, … and the last row; every other row i
// between kept rows a < i < b is w_a + (i − a)/(b − a)·(w_b − w_a). Returns Σ‖w − ŵ‖² / Σ‖w − w̄‖² over them.
double direct_reconstruction_error(const torch::Tensor& W, int s) {
  const int64_t P = W.size(0);
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < P; i += s) kept.push_back(i);
  if (kept.back() != P - 1) kept.push_back(P - 1);
  const auto mean = W.mean(0);
  double err = 0, spread = 0;
  for (size_t k = 0; k + 1 < kept.size(); ++k)
    for (int64_t i = kept[k] + 1; i < kept[k + 1]; ++i) {
      const double t = double(i - kept[k]) / double(kept[k + 1] - kept[k]);
      const auto w_hat = (1 - t) * W[kept[k]] + t * W[kept[k + 1]];
      err += (W[i] - w_hat).pow(2).sum().item<double>();
      spread += (W[i] - mean).pow(2).sum().item<double>();
    }
  return err / spread;
}

// Ridge from rows to positions with an intercept, fitted on `fit` rows, by the normal equations.
torch::Tensor ridge_predict(const torch::Tensor& X, const torch::Tensor& y, const torch::Tensor& Xt, double lambda) {
  const int64_t d = X.size(1);
  const auto mx = X.mean(0, true);
  const auto Xc = X - mx;
  const auto A = Xc.transpose(0, 1).matmul(Xc) + lambda * torch::eye(d, torch::kFloat64);
  const auto beta = torch::linalg_solve(A, Xc.transpose(0, 1).matmul(y - y.mean()).unsqueeze(1)).squeeze(1);
  return (Xt - mx).matmul(beta) + y.mean();
}

// Leave-one-out mean squared error of that ridge on the even rows, refitting without each row in turn.
double brute_force_loo(const torch::Tensor& W, double lambda) {
  const auto X = W.slice(0, 0, W.size(0), 2);
  const auto y = torch::arange(0, W.size(0), 2, torch::kFloat64);
  const int64_t n = X.size(0);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    auto keep = torch::cat({torch::arange(0, i), torch::arange(i + 1, n)});
    const auto pred = ridge_predict(X.index_select(0, keep), y.index_select(0, keep), X.slice(0, i, i + 1), lambda);
    sum += std::pow(pred.item<double>() - y[i].item<double>(), 2);
  }
  return sum / n;
}

}  // namespace

TEST(Interpolation, LinearTableIsRebuiltExactlyAtEveryStride) {
  const auto i = torch::arange(50, torch::kFloat64).unsqueeze(1);
  const auto W = 0.3 + i * torch::linspace(-1, 1, 8, torch::kFloat64).unsqueeze(0);  // w_i = a + i·b
  for (int s : {2, 4, 8, 16}) EXPECT_LT(reconstruction_error(W, s), 1e-24) << "stride " << s;
  const Analysis a = analyze_table(W, "linear");
  ASSERT_EQ(a.reconstruction.size(), 4u);
  for (const auto& r : a.reconstruction) {
    EXPECT_LT(r.error, 1e-24);
    EXPECT_GT(r.shuffled_error, 0.3) << "the shuffled copy of a linear table is not linear";
  }
}

TEST(Interpolation, MatchesTheDefinitionOnARandomTableWithAShortLastGap) {
  torch::manual_seed(3);
  const auto W = torch::randn({23, 6}, torch::kFloat64);  // 22 % 4, 22 % 8, 22 % 16 ≠ 0: a shorter last gap
  for (int s : {2, 4, 8, 16}) EXPECT_NEAR(reconstruction_error(W, s), direct_reconstruction_error(W, s), 1e-12) << s;
  // White noise: a midpoint guess has error E‖w − (w_a + w_b)/2‖² = 1.5 per unit spread, about.
  EXPECT_GT(reconstruction_error(W, 2), 0.8);
}

TEST(Interpolation, SinusoidErrorFollowsItsFrequency) {
  // Rows (sin ωi, cos ωi): a point on the unit circle. Linear interpolation at fraction t of a gap of s rows misses
  // by |(1 − t) + t·e^{iωs} − e^{iωts}|, the same in every gap; P = 65 makes every gap s rows long.
  const int64_t P = 65;
  const auto i = torch::arange(P, torch::kFloat64);
  double previous = 0;
  for (double omega : {0.05, 0.1, 0.2, 0.4}) {
    const auto W = torch::stack({torch::sin(omega * i), torch::cos(omega * i)}, 1);  // (P, 2)
    for (int s : {2, 4, 8}) {
      if (omega * s >= M_PI) continue;
      double err = 0, spread = 0;
      const auto mean = W.mean(0);
      for (int64_t r = 0; r < P - 1; ++r) {
        if (r % s == 0) continue;
        const double t = double(r % s) / s;
        err += std::norm(std::complex<double>(1 - t) + t * std::polar(1.0, omega * s) - std::polar(1.0, omega * s * t));
        spread += (W[r] - mean).pow(2).sum().item<double>();
      }
      EXPECT_NEAR(reconstruction_error(W, s), err / spread, 1e-12) << "omega " << omega << " stride " << s;
    }
    const double e4 = reconstruction_error(W, 4);
    EXPECT_GT(e4, previous) << "a faster sinusoid is harder to interpolate (omega " << omega << ")";
    previous = e4;
  }
}

TEST(Interpolation, StridesStopWhereTheTableEnds) {
  EXPECT_EQ(reconstruction_strides(64), (std::vector<int>{2, 4, 8, 16}));
  EXPECT_EQ(reconstruction_strides(31), (std::vector<int>{2, 4, 8}));
  EXPECT_EQ(reconstruction_strides(4), (std::vector<int>{2}));
  torch::manual_seed(1);
  const Analysis a = analyze_table(torch::randn({20, 4}, torch::kFloat64), "short");
  ASSERT_EQ(a.reconstruction.size(), 3u);
  for (const Metric& m : scalar_metrics())
    if (std::string(m.key) == "interpolation_error_s16") {
      EXPECT_EQ(format_metric(m, a), "-");
    }
}

TEST(PositionProbe, ReadsPositionFromALinearTableAndNotFromItsShuffledCopy) {
  torch::manual_seed(5);
  const int64_t P = 64;
  auto W = 0.01 * torch::randn({P, 16}, torch::kFloat64);
  W.select(1, 0) += torch::arange(P, torch::kFloat64) / P;  // one direction carries the position
  const Analysis a = analyze_table(W, "linear position");
  EXPECT_GT(a.probe.r2, 0.99);
  EXPECT_LT(a.probe.mae, 1.0);
  EXPECT_LT(a.shuffled_probe.r2, 0.5);
  EXPECT_GT(a.shuffled_probe.mae, 5.0);
}

TEST(PositionProbe, AgreesWithTheNormalEquationsAtTheChosenPenalty) {
  torch::manual_seed(7);
  const auto W = torch::randn({40, 8}, torch::kFloat64).cumsum(0);  // a random walk: some position signal
  const PositionProbe p = position_probe(W);
  ASSERT_TRUE(std::isfinite(p.lambda));
  const auto pred =
      ridge_predict(W.slice(0, 0, 40, 2), torch::arange(0, 40, 2, torch::kFloat64), W.slice(0, 1, 40, 2), p.lambda);
  const auto truth = torch::arange(1, 40, 2, torch::kFloat64);
  EXPECT_NEAR(p.mae, (pred - truth).abs().mean().item<double>(), 1e-8);
  const double ss_tot = (truth - truth.mean()).pow(2).sum().item<double>();
  EXPECT_NEAR(p.r2, 1 - (pred - truth).pow(2).sum().item<double>() / ss_tot, 1e-8);
  // The chosen penalty's leave-one-out error (refitting 20 times) is no worse than its neighbours' on the grid.
  const double at = brute_force_loo(W, p.lambda);
  EXPECT_NEAR(p.loo, at, 1e-9 * at) << "the closed form residual / (1 - H_ii) is the refit's, exactly";
  EXPECT_LE(at, brute_force_loo(W, p.lambda * std::sqrt(10.0)) + 1e-9);
  EXPECT_LE(at, brute_force_loo(W, p.lambda / std::sqrt(10.0)) + 1e-9);
}

TEST(Interpolation, GPT2TableIsSmoothEnoughToInterpolate) {
  const std::string path = poslab::test::source_dir() + "/tests/fixtures/gpt2_wpe_rows0-63.npy";
  const torch::Tensor W = read_npy_table(path).to(torch::kFloat64).slice(0, 1);  // row 0 stands apart
  const Analysis a = analyze_table(W, "gpt2 rows 1-63");
  ASSERT_FALSE(a.reconstruction.empty());
  EXPECT_LT(a.reconstruction[0].error * 5, a.reconstruction[0].shuffled_error);
  EXPECT_GT(a.probe.r2, 0.9);
  EXPECT_LT(a.shuffled_probe.r2, a.probe.r2 - 0.5);
}
