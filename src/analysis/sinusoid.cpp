// Sinusoid-likeness: the dominant frequency of each top principal component along position, and how much of
// the table the lowest frequencies explain.
#include <cmath>

#include "analysis/metrics.h"

namespace poslab::metrics {

void sinusoid(const torch::Tensor& W, const torch::Tensor& principal_dirs, const AnalysisOptions& opt, Analysis& out) {
  const int64_t P = W.size(0);
  auto Wc = W - W.mean(0, true);  // (P, d)
  out.pc_frequencies.clear();
  const int64_t n_pc = std::min<int64_t>(opt.top_pcs, principal_dirs.size(1));
  for (int64_t k = 0; k < n_pc; ++k) {
    PCFrequency f;
    f.component = static_cast<int>(k + 1);
    f.explained = k < static_cast<int64_t>(out.explained_variance.size()) ? out.explained_variance[k] : 0.0;
    auto proj = Wc.matmul(principal_dirs.select(1, k));   // (P,) position along this component
    auto power = torch::fft::rfft(proj).abs().pow(2);     // (P/2 + 1,)
    auto ac = power.slice(0, 1);                          // without DC (zero anyway after centring)
    const double total = ac.sum().item<double>();
    const int64_t fstar = ac.argmax().item<int64_t>() + 1;
    f.cycles_per_position = static_cast<double>(fstar) / P;
    f.period = static_cast<double>(P) / fstar;
    f.power_share = total > 0 ? ac[fstar - 1].item<double>() / total : 0.0;
    f.projection = to_vector(proj);
    out.pc_frequencies.push_back(std::move(f));
  }

  // Least squares on B = [1, sin(2π f p / P), cos(2π f p / P) for f = 1..K]; R² = 1 − ‖W − B·C‖² / ‖W_c‖².
  const int64_t K = std::max<int64_t>(1, std::min<int64_t>(opt.sinusoid_k, P / 2 - 1));
  out.sinusoid_k = static_cast<int>(K);
  auto pos = torch::arange(P, torch::kFloat64).unsqueeze(1);                    // (P, 1)
  auto freq = torch::arange(1, K + 1, torch::kFloat64).unsqueeze(0);           // (1, K)
  auto angle = 2 * M_PI * pos * freq / static_cast<double>(P);                  // (P, K)
  auto B = torch::cat({torch::ones({P, 1}, torch::kFloat64), torch::sin(angle), torch::cos(angle)}, 1);  // (P, 2K+1)
  auto coeff = torch::linalg_solve(B.transpose(0, 1).matmul(B), B.transpose(0, 1).matmul(W));           // (2K+1, d)
  const double resid = (W - B.matmul(coeff)).pow(2).sum().item<double>();
  const double spread = Wc.pow(2).sum().item<double>();
  out.sinusoid_r2 = spread > 0 ? 1.0 - resid / spread : 0.0;
}

}  // namespace poslab::metrics
