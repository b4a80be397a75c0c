#include "analysis/agreement.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>

#include "analysis/analysis.h"
#include "analysis/metrics.h"
#include "analysis/noise_floor.h"
#include "util/error.h"

namespace poslab {
namespace {

std::string shape_of(const torch::Tensor& t) {
  std::string s = "(";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + ")";
}

double frobenius2(const torch::Tensor& M) { return M.pow(2).sum().item<double>(); }

// Pearson correlation of two equal-length vectors (0 when one is constant).
double pearson(const torch::Tensor& x, const torch::Tensor& y) {
  const auto xc = x - x.mean(), yc = y - y.mean();
  const double den = std::sqrt(frobenius2(xc) * frobenius2(yc));
  return den > 0 ? (xc * yc).sum().item<double>() / den : 0.0;
}

}  // namespace

double linear_cka(const torch::Tensor& A_c, const torch::Tensor& B_c) {
  const double cross = frobenius2(B_c.transpose(0, 1).matmul(A_c));
  const double aa = std::sqrt(frobenius2(A_c.transpose(0, 1).matmul(A_c)));
  const double bb = std::sqrt(frobenius2(B_c.transpose(0, 1).matmul(B_c)));
  return aa > 0 && bb > 0 ? cross / (aa * bb) : 0.0;
}

double procrustes_residual(const torch::Tensor& A_c, const torch::Tensor& B_c) {
  const auto A = A_c / std::sqrt(frobenius2(A_c)), B = B_c / std::sqrt(frobenius2(B_c));
  // max over orthogonal R of tr(Rᵀ Aᵀ B) = Σ σ_i(Aᵀ B) (nuclear norm); the optimal scale is that sum, leaving
  // ‖s A R − B‖² = 1 − (Σ σ_i)².
  const double nuclear = torch::linalg_svdvals(A.transpose(0, 1).matmul(B)).sum().item<double>();
  return std::sqrt(std::max(0.0, 1.0 - nuclear * nuclear));
}

std::vector<double> principal_angles_degrees(const torch::Tensor& U, const torch::Tensor& V) {
  const auto cosines = torch::linalg_svdvals(U.transpose(0, 1).matmul(V)).clamp(0.0, 1.0);  // descending
  std::vector<double> angles;
  for (int64_t i = 0; i < cosines.size(0); ++i) angles.push_back(std::acos(cosines[i].item<double>()) * 180.0 / M_PI);
  return angles;  // ascending
}

double expected_random_cka(int64_t P, int64_t d) {
  // E‖B_cᵀA_c‖² = m d², E‖A_cᵀA_c‖² = m d (m + d + 1) for Gaussian entries, m = P − 1 rows after centring.
  const double m = static_cast<double>(P - 1), D = static_cast<double>(d);
  return D / (m + D + 1);
}

Agreement table_agreement(const torch::Tensor& A_in, const torch::Tensor& B_in, const std::string& a_source,
                          const std::string& b_source, int k) {
  if (A_in.dim() != 2 || B_in.dim() != 2 || A_in.sizes() != B_in.sizes())
    throw Error(fmt::format("{} is {} and {} is {}: tables of the same shape are compared", a_source, shape_of(A_in),
                            b_source, shape_of(B_in)),
                "pass two tables of the same model shape, or restrict both to the same rows with --rows");
  if (A_in.size(0) < 4) throw Error(a_source + ": fewer than 4 rows to compare", "pass larger tables");
  const auto A = A_in.detach().to(torch::kCPU, torch::kFloat64);
  const auto B = B_in.detach().to(torch::kCPU, torch::kFloat64);
  if (!torch::isfinite(A).all().item<bool>() || !torch::isfinite(B).all().item<bool>())
    throw Error((torch::isfinite(A).all().item<bool>() ? b_source : a_source) + ": holds NaN or Inf",
                "compare tables of a run that did not diverge");
  const auto A_c = A - A.mean(0, true), B_c = B - B.mean(0, true);
  for (const auto& [M, src] : {std::pair{A_c, a_source}, std::pair{B_c, b_source}})
    if (frobenius2(M) <= 0) throw Error(src + ": every row is the same", "a constant table has no geometry to compare");

  Agreement g;
  g.a_source = a_source;
  g.b_source = b_source;
  g.positions = A.size(0);
  g.dims = A.size(1);
  g.cka = linear_cka(A_c, B_c);
  g.cka_random = expected_random_cka(g.positions, g.dims);
  g.procrustes_residual = procrustes_residual(A_c, B_c);
  const auto offdiag = ~torch::eye(g.positions, torch::kBool);
  g.similarity_correlation =
      pearson(cosine_matrix(A).masked_select(offdiag), cosine_matrix(B).masked_select(offdiag));

  auto [Ua, Sa, Vha] = torch::linalg_svd(A_c, /*full_matrices=*/false);
  auto [Ub, Sb, Vhb] = torch::linalg_svd(B_c, /*full_matrices=*/false);
  g.signal_rank_a = noise_floor(metrics::to_vector(Sa), g.positions, g.dims).signal_rank;
  g.signal_rank_b = noise_floor(metrics::to_vector(Sb), g.positions, g.dims).signal_rank;
  const int64_t max_k = std::min<int64_t>(g.positions - 1, g.dims);
  if (k > max_k) throw Error(fmt::format("k = {}: a ({}, {}) table has at most {} centred components", k, g.positions,
                                         g.dims, max_k), "pass a smaller --k");
  g.k_given = k > 0;
  g.k = g.k_given ? k : std::min(g.signal_rank_a, g.signal_rank_b);
  g.mean_cos2_random = static_cast<double>(g.k) / static_cast<double>(g.positions - 1);
  if (g.k > 0) {
    g.principal_angles = principal_angles_degrees(Ua.slice(1, 0, g.k), Ub.slice(1, 0, g.k));
    double c2 = 0;
    for (double a : g.principal_angles) c2 += std::pow(std::cos(a * M_PI / 180.0), 2);
    g.mean_cos2 = c2 / g.k;
  }
  return g;
}

nlohmann::json to_json(const Agreement& g) {
  nlohmann::json j = {{"a", g.a_source},
                      {"b", g.b_source},
                      {"positions", g.positions},
                      {"dims", g.dims},
                      {"cka", g.cka},
                      {"cka_random", g.cka_random},
                      {"procrustes_residual", g.procrustes_residual},
                      {"similarity_correlation", g.similarity_correlation},
                      {"signal_rank_a", g.signal_rank_a},
                      {"signal_rank_b", g.signal_rank_b},
                      {"k", g.k},
                      {"k_from", g.k_given ? "--k" : "signal rank"},
                      {"principal_angles_degrees", g.principal_angles},
                      {"mean_cos2", g.k > 0 ? nlohmann::json(g.mean_cos2) : nlohmann::json(nullptr)},
                      {"mean_cos2_random", g.mean_cos2_random}};
  if (g.k == 0) j["principal_angles_note"] = "no component above the noise floor in one table: no subspace to compare";
  return j;
}

std::string agreement_text(const Agreement& g) {
  std::string s = fmt::format("agreement of {} and {} ({} x {}), up to rotation and scale:\n", g.a_source, g.b_source,
                              g.positions, g.dims);
  s += fmt::format("  linear CKA               {:.4f}   (independent random tables: {:.4f}; identical up to rotation: 1)\n",
                   g.cka, g.cka_random);
  s += fmt::format("  Procrustes residual      {:.4f}   (0: B is a rotated, rescaled A; 1: nothing in common)\n",
                   g.procrustes_residual);
  s += fmt::format("  similarity correlation   {:.4f}   (Pearson r of the two cosine matrices, off the diagonal)\n",
                   g.similarity_correlation);
  if (g.k == 0) {
    s += fmt::format("  principal angles         none: components above the noise floor A {}, B {} (pass --k K to "
                     "compare K anyway)\n", g.signal_rank_a, g.signal_rank_b);
    return s;
  }
  std::string angles;
  for (size_t i = 0; i < g.principal_angles.size() && i < 8; ++i)
    angles += fmt::format("{}{:.1f}", i ? " " : "", g.principal_angles[i]);
  if (g.principal_angles.size() > 8) angles += " …";
  s += fmt::format("  principal angles (top {}{}) {} degrees; mean cos² {:.3f} (random subspaces: {:.3f})\n", g.k,
                   g.k_given ? ", --k" : fmt::format(", signal ranks {} / {}", g.signal_rank_a, g.signal_rank_b),
                   angles, g.mean_cos2, g.mean_cos2_random);
  return s;
}

}  // namespace poslab
