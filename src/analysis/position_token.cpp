#include "analysis/position_token.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>

#include "analysis/agreement.h"
#include "analysis/metrics.h"
#include "analysis/noise_floor.h"
#include "util/error.h"

namespace poslab {
namespace {

torch::Tensor unit_rows(const torch::Tensor& M) { return M / M.norm(2, 1, true).clamp_min(1e-300); }

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? NAN : s / static_cast<double>(v.size());
}

}  // namespace

PositionTokenGeometry position_token_geometry(const torch::Tensor& wte_in, const torch::Tensor& wpe_in, int k) {
  if (wte_in.dim() != 2 || wpe_in.dim() != 2 || wte_in.size(1) != wpe_in.size(1))
    throw Error("position/token geometry: token embeddings " + c10::str(wte_in.sizes()) + " and position table " +
                    c10::str(wpe_in.sizes()) + " must be (V, C) and (P, C)",
                "the model's weights do not match its config: the file is damaged or of another layout");
  const auto T = wte_in.detach().to(torch::kCPU, torch::kFloat64), W = wpe_in.detach().to(torch::kCPU, torch::kFloat64);
  PositionTokenGeometry g;
  g.vocab = T.size(0);
  g.positions = W.size(0);
  g.dims = W.size(1);
  const auto T_c = metrics::centred(T), W_c = metrics::centred(W);
  auto [Uw, Sw, Vhw] = torch::linalg_svd(W_c, /*full_matrices=*/false);  // Vhw: (min(P, C), C)
  // Every token direction, by falling variance: the eigenvectors of T_cᵀ T_c (C × C, whatever V is).
  const auto Vt = std::get<1>(torch::linalg_eigh(T_c.transpose(0, 1).matmul(T_c))).flip({1});  // (C, C)
  const int rank = noise_floor(metrics::to_vector(Sw), g.positions, g.dims).signal_rank;
  g.k = static_cast<int>(std::min<int64_t>(k > 0 ? k : std::max(rank, 1), Vhw.size(0)));
  const auto Vp = Vhw.slice(0, 0, g.k).transpose(0, 1);  // (C, k) position directions
  g.principal_angles = principal_angles_degrees(Vp, Vt.slice(1, 0, g.k));

  const int64_t C = g.dims;
  const double mean_var = T_c.pow(2).sum().item<double>() / static_cast<double>(C);  // (V − 1) cancels in the ratio
  const auto along = T_c.matmul(Vp).pow(2).sum(0);                                   // (k,) ‖T_c v_i‖²
  g.token_variance_ratio = metrics::to_vector(along / mean_var);
  const auto weights = Vt.transpose(0, 1).matmul(Vp).pow(2);                                 // (C, k): (t_j · v_i)²
  const auto rank_pos = (torch::arange(C, torch::kFloat64) + 0.5) / static_cast<double>(C);  // (C,)
  g.token_spectrum_quantile = metrics::to_vector(rank_pos.matmul(weights));

  const auto cos = unit_rows(T).matmul(unit_rows(W).transpose(0, 1)).abs();  // (V, P)
  g.max_abs_cosine = cos.max().item<double>();
  g.mean_abs_cosine = cos.mean().item<double>();
  return g;
}

nlohmann::json to_json(const PositionTokenGeometry& g) {
  return {{"vocab", g.vocab},
          {"positions", g.positions},
          {"dims", g.dims},
          {"k", g.k},
          {"principal_angles_degrees", g.principal_angles},
          {"token_variance_ratio", g.token_variance_ratio},
          {"token_spectrum_quantile", g.token_spectrum_quantile},
          {"mean_token_variance_ratio", mean_of(g.token_variance_ratio)},
          {"mean_token_spectrum_quantile", mean_of(g.token_spectrum_quantile)},
          {"max_abs_cosine", g.max_abs_cosine},
          {"mean_abs_cosine", g.mean_abs_cosine}};
}

std::string position_token_text(const PositionTokenGeometry& g) {
  std::string angles;
  for (size_t i = 0; i < g.principal_angles.size() && i < 6; ++i)
    angles += fmt::format("{}{:.0f}", i ? " " : "", g.principal_angles[i]);
  if (g.principal_angles.size() > 6) angles += " …";
  return fmt::format(
      "  top {} position directions against the top {} token directions: principal angles {} degrees (90: orthogonal)\n"
      "  token variance along them {:.2f} × the token embedding's mean per direction; their place in the token "
      "spectrum {:.2f} (0 top, 0.5 a random direction, 1 bottom)\n"
      "  |cos| between a token row and a position row: max {:.3f}, mean {:.3f} ({} x {} pairs)\n",
      g.k, g.k, angles, mean_of(g.token_variance_ratio), mean_of(g.token_spectrum_quantile), g.max_abs_cosine,
      g.mean_abs_cosine, g.vocab, g.positions);
}

}  // namespace poslab
