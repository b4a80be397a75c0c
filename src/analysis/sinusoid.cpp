// Sinusoid-likeness: the period of every component above the noise floor, the circles and the helix they form,
// the table's periodogram, and how much of the table the K lowest and the K strongest frequencies explain.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "analysis/metrics.h"

namespace poslab::metrics {
namespace {

// R² of W from the constant and sin/cos at the given frequencies (cycles per table): 1 − ‖W − B·C‖² / ‖W_c‖².
double fit_r2(const torch::Tensor& W, const std::vector<int>& frequencies) {
  const int64_t P = W.size(0);
  auto pos = torch::arange(P, torch::kFloat64).unsqueeze(1);  // (P, 1)
  auto freq = torch::tensor(std::vector<double>(frequencies.begin(), frequencies.end()), torch::kFloat64)
                  .unsqueeze(0);                                                                         // (1, K)
  auto angle = 2 * M_PI * pos * freq / static_cast<double>(P);                                           // (P, K)
  auto B = torch::cat({torch::ones({P, 1}, torch::kFloat64), torch::sin(angle), torch::cos(angle)}, 1);  // (P, 2K+1)
  const auto Wc = centred(W);  // the same fit (B holds the constant), with nothing of a common part to round
  auto coeff = torch::linalg_solve(B.transpose(0, 1).matmul(B), B.transpose(0, 1).matmul(Wc));  // (2K+1, d)
  const double resid = (Wc - B.matmul(coeff)).pow(2).sum().item<double>();
  const double spread = Wc.pow(2).sum().item<double>();
  return spread > 0 ? 1.0 - resid / spread : 0.0;
}

}  // namespace

void sinusoid(const torch::Tensor& W, const torch::Tensor& principal_dirs, const AnalysisOptions& opt, Analysis& out) {
  const int64_t P = W.size(0);
  auto Wc = centred(W);  // (P, d)

  // Every component above the noise floor (the first top_pcs at least): its period, share and entropy.
  const int64_t above = std::min<int64_t>(out.noise.signal_rank, opt.max_components);
  const int64_t n_pc = std::min<int64_t>(std::max<int64_t>(opt.top_pcs, above), principal_dirs.size(1));
  out.pc_frequencies.clear();
  std::vector<std::vector<double>> curves;
  std::vector<CurvePeriod> periods;
  std::vector<double> explained;
  for (int64_t k = 0; k < n_pc; ++k) {
    std::vector<double> proj = to_vector(Wc.matmul(principal_dirs.select(1, k)));  // (P,) position along component k
    const CurvePeriod c = curve_period(proj);
    PCFrequency f;
    f.component = static_cast<int>(k + 1);
    f.explained = k < static_cast<int64_t>(out.explained_variance.size()) ? out.explained_variance[k] : 0.0;
    f.cycles_per_position = c.frequency / static_cast<double>(P);
    f.period = c.period;
    f.power_share = c.power_share;
    f.spectral_entropy = c.spectral_entropy;
    f.slow_share = c.slow_share;
    if (k < opt.top_pcs) f.projection = proj;
    out.pc_frequencies.push_back(f);
    if (k < above && f.explained > kNoVariance) {  // circles only among components that stand above the noise
      curves.push_back(std::move(proj));
      periods.push_back(c);
      explained.push_back(f.explained);
    }
  }
  out.circles = find_circles(curves, explained, periods);
  out.helix = find_helix(out.circles, curves, explained, periods);
  // The helix's (or the strongest circle's) components keep their projections too: the figures draw them.
  auto keep = [&](int component) {
    auto& f = out.pc_frequencies[static_cast<size_t>(component - 1)];
    if (f.projection.empty()) f.projection = curves[static_cast<size_t>(component - 1)];
  };
  if (!out.circles.empty()) keep(out.circles[0].first), keep(out.circles[0].second);
  if (out.helix) keep(out.helix->slow);

  // The periodogram: W_c's power at each frequency, summed over the dimensions (= over the components).
  auto power = torch::fft::rfft(Wc, c10::nullopt, 0).abs().pow(2).sum(1).slice(0, 1);  // (⌊P/2⌋,)
  const double total = power.sum().item<double>();
  out.periodogram = to_vector(total > 0 ? power / total : power);

  // Least squares on the K lowest frequencies, and on the K of most power (the Nyquist bin, sin ≡ 0 there, left out).
  const int64_t K = std::max<int64_t>(1, std::min<int64_t>(opt.sinusoid_k, (P - 1) / 2));
  out.sinusoid_k = static_cast<int>(K);
  std::vector<int> lowest(static_cast<size_t>(K));
  std::iota(lowest.begin(), lowest.end(), 1);
  out.sinusoid_r2 = fit_r2(W, lowest);
  std::vector<int> bins((P - 1) / 2);  // f = 1 … ⌈P/2⌉ − 1
  std::iota(bins.begin(), bins.end(), 1);
  std::stable_sort(bins.begin(), bins.end(),
                   [&](int a, int b) { return out.periodogram[a - 1] > out.periodogram[b - 1]; });
  out.strongest_frequencies.assign(bins.begin(), bins.begin() + K);
  out.sinusoid_r2_strongest = fit_r2(W, out.strongest_frequencies);
}

}  // namespace poslab::metrics
