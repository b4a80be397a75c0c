// How interpolable the table is: rows rebuilt from their neighbours, and position read back by a linear probe.
#include <limits>

#include "analysis/metrics.h"

namespace poslab {

std::vector<int> reconstruction_strides(int64_t P) {
  std::vector<int> strides;
  for (int s : {2, 4, 8, 16})
    if (2 * s <= P) strides.push_back(s);
  return strides;
}

double reconstruction_error(const torch::Tensor& W, int stride) {
  const int64_t P = W.size(0);
  TORCH_CHECK(stride >= 2 && stride < P, "reconstruction_error: stride ", stride, " for ", P, " rows");
  // Rebuilt row i lies between kept rows lo = ⌊i/s⌋·s and hi = min(lo + s, P − 1).
  std::vector<int64_t> rows, lo, hi;
  std::vector<double> t;
  for (int64_t i = 0; i < P - 1; ++i) {
    if (i % stride == 0) continue;
    const int64_t a = i / stride * stride, b = std::min<int64_t>(a + stride, P - 1);
    rows.push_back(i);
    lo.push_back(a);
    hi.push_back(b);
    t.push_back(static_cast<double>(i - a) / static_cast<double>(b - a));
  }
  auto index = [](const std::vector<int64_t>& v) { return torch::tensor(v, torch::kInt64); };
  const auto w_lo = W.index_select(0, index(lo)), w_hi = W.index_select(0, index(hi));  // (R, d)
  const auto frac = torch::tensor(t, torch::kFloat64).unsqueeze(1);                     // (R, 1)
  const auto rebuilt = w_lo + frac * (w_hi - w_lo);
  const auto truth = W.index_select(0, index(rows));
  const double spread = metrics::centred(W).index_select(0, index(rows)).pow(2).sum().item<double>();
  const double err = (truth - rebuilt).pow(2).sum().item<double>();
  return spread > 0 ? err / spread : (err > 0 ? std::numeric_limits<double>::infinity() : 0.0);
}

PositionProbe position_probe(const torch::Tensor& W) {
  const int64_t P = W.size(0);
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  const auto X = W.slice(0, 0, P, 2), Xt = W.slice(0, 1, P, 2);                  // even rows, odd rows
  const auto y = torch::arange(0, P, 2, f64), yt = torch::arange(1, P, 2, f64);  // their positions
  const int64_t n = X.size(0);
  // Intercept unpenalised: centre on the even rows' means.
  const auto mx = X.mean(0, true);
  const double my = y.mean().item<double>();
  const auto Xc = X - mx, yc = y - my;
  const auto usv = torch::linalg_svd(Xc, /*full_matrices=*/false);
  const auto& U = std::get<0>(usv);               // (n, r)
  const auto& S = std::get<1>(usv);               // (r,)
  const auto& Vh = std::get<2>(usv);              // (r, d)
  const auto Uty = U.transpose(0, 1).matmul(yc);  // (r,)
  const auto S2 = S.pow(2);
  const double scale = std::max(S2.sum().item<double>() / static_cast<double>(n), 1e-300);
  // The penalty with the least leave-one-out error on the even rows: for ridge, residual_i / (1 − H_ii) exactly,
  // with H = 11ᵀ/n + U diag(σ²/(σ² + λ)) Uᵀ.
  PositionProbe probe;
  double best = std::numeric_limits<double>::infinity();
  for (int k = -16; k <= 6; ++k) {
    const double lambda = scale * std::pow(10.0, k / 2.0);
    const auto shrink = S2 / (S2 + lambda);                                 // (r,)
    const auto fitted = U.matmul(shrink * Uty);                             // (n,)
    const auto h = U.pow(2).matmul(shrink) + 1.0 / static_cast<double>(n);  // (n,) H_ii
    const auto denom = 1.0 - h;
    if (denom.min().item<double>() < 1e-9) continue;  // a row fitted exactly: its left-out error is undefined
    const double loo = ((yc - fitted) / denom).pow(2).mean().item<double>();
    if (loo < best) {
      best = probe.loo = loo;
      probe.lambda = lambda;
    }
  }
  if (!std::isfinite(probe.lambda)) probe.lambda = scale * 1e3;  // nothing scored (n = 2): the strongest penalty
  const auto beta = Vh.transpose(0, 1).matmul(S / (S2 + probe.lambda) * Uty);  // (d,)
  const auto pred = (Xt - mx).matmul(beta) + my;
  probe.mae = (pred - yt).abs().mean().item<double>();
  const double ss_tot = (yt - yt.mean()).pow(2).sum().item<double>();
  probe.r2 = ss_tot > 0 ? 1.0 - (pred - yt).pow(2).sum().item<double>() / ss_tot : NAN;
  return probe;
}

namespace metrics {

void interpolation(const torch::Tensor& W, const AnalysisOptions& opt, Analysis& out) {
  const auto shuffled = shuffle_rows(W, opt.shuffle_seed);
  for (int s : reconstruction_strides(W.size(0)))
    out.reconstruction.push_back({s, reconstruction_error(W, s), reconstruction_error(shuffled, s)});
  out.probe = position_probe(W);
  out.shuffled_probe = position_probe(shuffled);
}

}  // namespace metrics
}  // namespace poslab
