// Spectrum and effective dimensionality.
#include <cmath>

#include "analysis/metrics.h"

namespace poslab {

int components_for(const std::vector<double>& cumulative, double share) {
  for (size_t k = 0; k < cumulative.size(); ++k)
    if (cumulative[k] >= share - 1e-12) return static_cast<int>(k + 1);
  return static_cast<int>(cumulative.size());
}

namespace metrics {

std::vector<double> to_vector(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kCPU, torch::kFloat64).contiguous().reshape(-1);
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

torch::Tensor centred(const torch::Tensor& W) {
  const auto D = W - W.slice(0, 0, 1);
  return D - D.mean(0, /*keepdim=*/true);
}

namespace {
// exp of the Shannon entropy of p (zeros contribute nothing).
double exp_entropy(const torch::Tensor& p) {
  auto nz = p.masked_select(p > 0);
  return std::exp(-(nz * nz.log()).sum().item<double>());
}
}  // namespace

torch::Tensor spectrum(const torch::Tensor& W, Analysis& out) {
  auto sv = torch::linalg_svdvals(W);                                // (r,)
  auto Wc = centred(W);                                              // (P, d)
  auto [U, S, Vh] = torch::linalg_svd(Wc, /*full_matrices=*/false);  // S: (r,), Vh: (r, d)
  out.singular_values = to_vector(sv);
  out.singular_values_centered = to_vector(S);

  auto s2 = S * S;
  const double total = s2.sum().item<double>();
  auto ev = total > 0 ? s2 / total : torch::zeros_like(s2);
  out.explained_variance = to_vector(ev);
  out.cumulative_variance = to_vector(ev.cumsum(0));
  if (total > 0) {  // rows all one row: no variance, and no component needed for any share of it
    out.k50 = components_for(out.cumulative_variance, 0.50);
    out.k90 = components_for(out.cumulative_variance, 0.90);
    out.k95 = components_for(out.cumulative_variance, 0.95);
    out.k99 = components_for(out.cumulative_variance, 0.99);
  }
  auto sv2 = sv * sv;
  out.k90_uncentered = components_for(to_vector((sv2 / sv2.sum().clamp_min(1e-300)).cumsum(0)), 0.90);

  if (total > 0) {
    out.effective_rank = exp_entropy(ev);
    out.roy_vetterli_rank = exp_entropy(S / S.sum());
    out.participation_ratio = total * total / (s2 * s2).sum().item<double>();
    out.stable_rank = total / s2[0].item<double>();
  }
  out.noise = noise_floor(out.singular_values_centered, W.size(0), W.size(1));
  return Vh.transpose(0, 1);  // (d, r)
}

}  // namespace metrics
}  // namespace poslab
