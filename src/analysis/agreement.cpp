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

std::string shape_text(const torch::Tensor& t) {
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

double mean_cos2(const torch::Tensor& U, const torch::Tensor& V) {
  return torch::linalg_svdvals(U.transpose(0, 1).matmul(V)).clamp(0.0, 1.0).pow(2).mean().item<double>();
}

ShuffledNull mean_sd(const std::vector<double>& v) {
  ShuffledNull n;
  if (v.empty()) return n;
  for (double x : v) n.mean += x / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - n.mean) * (x - n.mean);
  n.sd = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0;
  return n;
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

double expected_random_cka(int64_t P, int64_t d_a, int64_t d_b) {
  // E‖B_cᵀA_c‖² = m d_A d_B, E‖A_cᵀA_c‖² = m d_A (m + d_A + 1) for Gaussian entries, m = P − 1 rows after centring.
  const double m = static_cast<double>(P - 1), a = static_cast<double>(d_a), b = static_cast<double>(d_b);
  return std::sqrt(a * b / ((m + a + 1) * (m + b + 1)));
}

namespace {

// Every measure against B with its rows permuted: B_c's rows, the cosine matrix's rows and columns, and U_B's rows
// (the left singular vectors of a row-permuted table are the permuted ones).
void shuffled_nulls(Agreement& g, const torch::Tensor& A_c, const torch::Tensor& B_c, const torch::Tensor& cos_a,
                    const torch::Tensor& cos_b, const torch::Tensor& Ua, const torch::Tensor& Ub, int shuffles,
                    uint64_t seed) {
  g.shuffles = std::max(shuffles, 0);
  if (g.shuffles == 0) return;
  const auto offdiag = ~torch::eye(g.positions, torch::kBool);
  std::vector<double> cka, residual, similarity, cos2;
  for (int s = 0; s < g.shuffles; ++s) {
    const auto perm = torch::tensor(shuffle_permutation(g.positions, seed + static_cast<uint64_t>(s)));
    const auto Bp = B_c.index_select(0, perm);
    cka.push_back(linear_cka(A_c, Bp));
    residual.push_back(procrustes_residual(A_c, Bp));
    similarity.push_back(pearson(cos_a, cos_b.index_select(0, perm).index_select(1, perm).masked_select(offdiag)));
    if (g.k > 0) cos2.push_back(mean_cos2(Ua.slice(1, 0, g.k), Ub.slice(1, 0, g.k).index_select(0, perm)));
  }
  g.cka_shuffled = mean_sd(cka);
  g.procrustes_shuffled = mean_sd(residual);
  g.similarity_shuffled = mean_sd(similarity);
  g.mean_cos2_shuffled = mean_sd(cos2);
}

}  // namespace

Agreement table_agreement(const torch::Tensor& A_in, const torch::Tensor& B_in, const std::string& a_source,
                          const std::string& b_source, int k, int shuffles, uint64_t seed) {
  if (A_in.dim() != 2 || B_in.dim() != 2 || A_in.size(0) != B_in.size(0))
    throw Error(fmt::format("{} is {} and {} is {}: tables of the same positions (rows) are compared", a_source,
                            shape_text(A_in), b_source, shape_text(B_in)),
                "restrict both to the same positions with --rows BEGIN:END");
  if (A_in.size(0) < 4) throw Error(a_source + ": fewer than 4 rows to compare", "pass larger tables");
  const auto A = A_in.detach().to(torch::kCPU, torch::kFloat64);
  const auto B = B_in.detach().to(torch::kCPU, torch::kFloat64);
  if (!torch::isfinite(A).all().item<bool>() || !torch::isfinite(B).all().item<bool>())
    throw Error((torch::isfinite(A).all().item<bool>() ? b_source : a_source) + ": holds NaN or Inf",
                "compare tables of a run that did not diverge");
  const auto A_c = metrics::centred(A), B_c = metrics::centred(B);
  for (const auto& [M, src] : {std::pair{A_c, a_source}, std::pair{B_c, b_source}})
    if (frobenius2(M) <= 0) throw Error(src + ": every row is the same", "a constant table has no geometry to compare");

  Agreement g;
  g.a_source = a_source;
  g.b_source = b_source;
  g.positions = A.size(0);
  g.dims = A.size(1);
  g.dims_b = B.size(1);
  g.cka = linear_cka(A_c, B_c);
  g.cka_random = expected_random_cka(g.positions, g.dims, g.dims_b);
  g.procrustes_residual = procrustes_residual(A_c, B_c);
  const auto offdiag = ~torch::eye(g.positions, torch::kBool);
  const auto cos_a = cosine_matrix(A).masked_select(offdiag), cos_b = cosine_matrix(B);
  g.similarity_correlation = pearson(cos_a, cos_b.masked_select(offdiag));

  auto [Ua, Sa, Vha] = torch::linalg_svd(A_c, /*full_matrices=*/false);
  auto [Ub, Sb, Vhb] = torch::linalg_svd(B_c, /*full_matrices=*/false);
  g.signal_rank_a = noise_floor(metrics::to_vector(Sa), g.positions, g.dims).signal_rank;
  g.signal_rank_b = noise_floor(metrics::to_vector(Sb), g.positions, g.dims_b).signal_rank;
  const int64_t max_k = std::min<int64_t>(g.positions - 1, std::min(g.dims, g.dims_b));
  if (k > max_k)
    throw Error(fmt::format("k = {}: a ({}, {}) table has at most {} centred components", k, g.positions,
                            std::min(g.dims, g.dims_b), max_k),
                "pass a smaller --k");
  g.k_given = k > 0;
  g.k = g.k_given ? k : std::min(g.signal_rank_a, g.signal_rank_b);
  g.mean_cos2_random = static_cast<double>(g.k) / static_cast<double>(g.positions - 1);
  if (g.k > 0) {
    g.principal_angles = principal_angles_degrees(Ua.slice(1, 0, g.k), Ub.slice(1, 0, g.k));
    double c2 = 0;
    for (double a : g.principal_angles) c2 += std::pow(std::cos(a * M_PI / 180.0), 2);
    g.mean_cos2 = c2 / g.k;
  }
  shuffled_nulls(g, A_c, B_c, cos_a, cos_b, Ua, Ub, shuffles, seed);
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
                      {"mean_cos2_random", g.mean_cos2_random},
                      {"dims_b", g.dims_b},
                      {"shuffles", g.shuffles}};
  auto null = [](const ShuffledNull& n) { return nlohmann::json{{"mean", n.mean}, {"sd", n.sd}}; };
  if (g.shuffles > 0) {
    j["shuffled"] = {{"cka", null(g.cka_shuffled)},
                     {"procrustes_residual", null(g.procrustes_shuffled)},
                     {"similarity_correlation", null(g.similarity_shuffled)}};
    if (g.k > 0) j["shuffled"]["mean_cos2"] = null(g.mean_cos2_shuffled);
  }
  if (g.k == 0) j["principal_angles_note"] = "no component above the noise floor in one table: no subspace to compare";
  return j;
}

std::string agreement_text(const Agreement& g) {
  const std::string shape = g.dims == g.dims_b
                                ? fmt::format("{} x {}", g.positions, g.dims)
                                : fmt::format("{} positions, widths {} and {}", g.positions, g.dims, g.dims_b);
  std::string s =
      fmt::format("agreement of {} and {} ({}), up to rotation and scale:\n", g.a_source, g.b_source, shape);
  // "B shuffled": the measure against B with its rows shuffled, mean ± sd over the copies. The values keep a column
  // for their sign, so that a negative correlation lines up with the rest.
  auto null = [&](const ShuffledNull& n) {
    return g.shuffles > 0 ? fmt::format("B's rows shuffled: {:.4f} ± {:.4f}; ", n.mean, n.sd) : std::string();
  };
  s += fmt::format(
      "  linear CKA              {: .4f}   ({}independent random tables: {:.4f}; identical up to rotation: 1)\n", g.cka,
      null(g.cka_shuffled), g.cka_random);
  s += fmt::format("  Procrustes residual     {: .4f}   ({}0: B is a rotated, rescaled A; 1: nothing in common)\n",
                   g.procrustes_residual, null(g.procrustes_shuffled));
  s += fmt::format("  similarity correlation  {: .4f}   ({}Pearson r of the two cosine matrices, off the diagonal)\n",
                   g.similarity_correlation, null(g.similarity_shuffled));
  if (g.k == 0) {
    s += fmt::format(
        "  principal angles         none: components above the noise floor A {}, B {} (pass --k K to "
        "compare K anyway)\n",
        g.signal_rank_a, g.signal_rank_b);
    return s;
  }
  std::string angles;
  for (size_t i = 0; i < g.principal_angles.size() && i < 8; ++i)
    angles += fmt::format("{}{:.1f}", i ? " " : "", g.principal_angles[i]);
  if (g.principal_angles.size() > 8) angles += " …";
  s += fmt::format("  principal angles (top {}{}) {} degrees; mean cos² {:.3f} ({}random subspaces: {:.3f})\n", g.k,
                   g.k_given ? ", --k" : fmt::format(", signal ranks {} / {}", g.signal_rank_a, g.signal_rank_b),
                   angles, g.mean_cos2,
                   g.shuffles > 0 ? fmt::format("B's rows shuffled: {:.3f} ± {:.3f}; ", g.mean_cos2_shuffled.mean,
                                                g.mean_cos2_shuffled.sd)
                                  : std::string(),
                   g.mean_cos2_random);
  return s;
}

}  // namespace poslab
