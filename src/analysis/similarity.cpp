// Cosine similarity, smoothness (with the row-shuffled control), translation invariance and monotonicity, and
// boundary effects, and rows that alone hold much of the variance.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "analysis/metrics.h"
#include "analysis/offsets.h"

namespace poslab {
namespace {

// (v − mean) / sd; with no spread beyond `rounding`, ±1e9 for a value off the mean by more and 0 on it.
double z_score(double v, double mean, double sd, double rounding) {
  if (sd > rounding) return (v - mean) / sd;
  return std::abs(v - mean) > rounding ? (v > mean ? 1e9 : -1e9) : 0.0;
}

// What rounding leaves of quantities equal in exact arithmetic, with room to spare. A table stored in float32 (as
// poslab's are; a float64 table is held to the same) has each entry off by up to ε = 6e-8 of itself; a row whose weight
// lies in n columns, n = (Σw²)²/Σw⁴ (C where it is spread evenly, 2 for a circle in two columns of many), has its norm
// moved by ~ε/√n of itself and is turned by ~ε/√n rad within the plane of its cosine with another, which moves c = cos
// θ by ~ε·sin θ/√n, sin θ ≈ √(2(1 − c)) near 1. Not a share of c itself: rows that share a large part (a constant added
// to every entry) have cosines within 1e-6 of 1 whose spread, ~1e-7, is still signal. The cosine's floor is float64's
// own rounding of it.
struct Rounding {
  double per_row = 0;  // row_rounding: 16·ε/√n, n the fewest columns any nonzero row's weight lies in

  explicit Rounding(double per_row) : per_row(per_row) {}
  double norm(double v, double mean) const { return per_row * std::max(std::abs(mean), std::abs(v)); }
  double cosine(double v, double mean) const {
    const double c = std::min(1.0, std::max(std::abs(mean), std::abs(v)));
    return per_row * std::sqrt(2.0 * (1.0 - c)) + 1e-13;
  }
};

}  // namespace

double row_rounding(const torch::Tensor& W) {
  const auto peak = W.abs().amax(1, /*keepdim=*/true);   // (P, 1)
  const auto w2 = (W / peak.clamp_min(1e-300)).pow(2);   // each row's largest entry ±1: n is
  const auto sum2 = w2.sum(1), sum4 = w2.pow(2).sum(1);  // its scale's, and w⁴ cannot overflow
  const auto nonzero = peak.squeeze(1) > 0;
  const double n = nonzero.any().item<bool>()
                       ? (sum2.masked_select(nonzero).pow(2) / sum4.masked_select(nonzero)).min().item<double>()
                       : static_cast<double>(W.size(1));
  return 16 * std::ldexp(1.0, -24) / std::sqrt(std::max(n, 1.0));
}

torch::Tensor cosine_matrix(const torch::Tensor& W) {
  auto n = W.norm(2, 1, /*keepdim=*/true).clamp_min(1e-300);  // (P, 1)
  auto U = W / n;                                             // unit rows; zero rows stay zero
  return U.matmul(U.transpose(0, 1));                         // (P, P)
}

Smoothness smoothness(const torch::Tensor& W) {
  Smoothness s;
  const double spread = metrics::centred(W).pow(2).sum().item<double>();  // Σ‖w_i − w̄‖²
  auto d1 = W.slice(0, 1) - W.slice(0, 0, -1);                            // (P−1, d)
  auto d2 = W.slice(0, 2) - 2 * W.slice(0, 1, -1) + W.slice(0, 0, -2);    // (P−2, d)
  s.first_difference_energy = spread > 0 ? d1.pow(2).sum().item<double>() / spread : 0.0;
  s.second_difference_energy = spread > 0 ? d2.pow(2).sum().item<double>() / spread : 0.0;
  auto U = W / W.norm(2, 1, /*keepdim=*/true).clamp_min(1e-300);  // unit rows, as cosine_matrix: a zero row's cosines 0
  s.adjacent_cosine = (U.slice(0, 1) * U.slice(0, 0, -1)).sum(1).mean().item<double>();
  return s;
}

std::vector<int64_t> shuffle_permutation(int64_t P, uint64_t seed) {
  std::vector<int64_t> perm(static_cast<size_t>(P));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  std::mt19937_64 rng(seed);
  for (size_t i = perm.size() - 1; i > 0; --i) std::swap(perm[i], perm[rng() % (i + 1)]);  // Fisher–Yates
  return perm;
}

torch::Tensor shuffle_rows(const torch::Tensor& W, uint64_t seed) {
  return W.index_select(0, torch::tensor(shuffle_permutation(W.size(0), seed), torch::kInt64));
}

ShuffleControl shuffle_control(const torch::Tensor& C, double rounding, double adjacent_cosine, int copies,
                               uint64_t seed) {
  TORCH_CHECK(rounding >= 0, "shuffle_control: rounding ", rounding);
  ShuffleControl sc;
  sc.copies = copies;
  if (copies < 1) return sc;
  const int64_t P = C.size(0);
  auto c = C.to(torch::kFloat64).contiguous();
  const double* cp = c.data_ptr<double>();
  std::vector<double> values;
  for (int k = 0; k < copies; ++k) {
    const std::vector<int64_t> perm = shuffle_permutation(P, seed + static_cast<uint64_t>(k));
    // the shuffled copy's row i is the table's row perm[i]: its adjacent pairs are C[perm[i], perm[i+1]]
    double sum = 0;
    for (int64_t i = 0; i + 1 < P; ++i) sum += cp[perm[i] * P + perm[i + 1]];
    values.push_back(sum / static_cast<double>(P - 1));
  }
  for (double v : values) sc.mean += v / copies;
  for (double v : values) sc.sd += copies > 1 ? (v - sc.mean) * (v - sc.mean) / (copies - 1) : 0.0;
  sc.sd = std::sqrt(sc.sd);
  sc.z = z_score(adjacent_cosine, sc.mean, sc.sd, Rounding(rounding).cosine(adjacent_cosine, sc.mean));
  return sc;
}

namespace metrics {

void similarity(const torch::Tensor& W, const AnalysisOptions& opt, Analysis& out) {
  const int64_t P = W.size(0);
  auto C = cosine_matrix(W);  // (P, P)
  out.adjacent_cosines = to_vector(C.diagonal(1));
  out.cos_by_offset.resize(static_cast<size_t>(P - 1));
  for (int64_t k = 1; k < P; ++k) out.cos_by_offset[k - 1] = C.diagonal(k).mean().item<double>();
  if (opt.keep_cosine_matrix) out.cosine_matrix = C.to(torch::kFloat32);
  out.smooth = smoothness(W);
  out.shuffled = smoothness(shuffle_rows(W, opt.shuffle_seed));
  out.shuffle_control =
      shuffle_control(C, row_rounding(W), out.smooth.adjacent_cosine, opt.shuffle_copies, opt.shuffle_seed);
  out.half_offset.reset();
  // Neighbours no more alike than the row-shuffled copies' (noise: c(1) near 0, of either sign), or pointing apart
  // (c(1) ≤ 0): similarity has nothing to halve, and the first offset below half of c(1) would be noise's.
  const bool alike = out.cos_by_offset[0] > 0 && out.shuffle_control.z >= kHalfOffsetMinZ;
  for (int64_t k = 1; k < P && alike; ++k) {
    if (out.cos_by_offset[k - 1] < 0.5 * out.cos_by_offset[0]) {
      out.half_offset = static_cast<int>(k);
      break;
    }
  }
  // Translation invariance and monotonicity, of the table and of its row-shuffled copy (the same shuffle as above).
  auto c = C.contiguous();
  const std::vector<int64_t> perm = shuffle_permutation(P, opt.shuffle_seed);
  out.translation_invariance = translation_invariance(c.data_ptr<double>(), P);
  out.shuffled_translation_invariance = translation_invariance(c.data_ptr<double>(), P, &perm);
  out.monotonicity = monotonicity(c.data_ptr<double>(), P);
  out.shuffled_monotonicity = monotonicity(c.data_ptr<double>(), P, &perm);
}

void boundary(const torch::Tensor& W, const AnalysisOptions& opt, Analysis& out) {
  const int64_t P = W.size(0);
  auto norms = W.norm(2, 1);  // (P,)
  out.row_norms = to_vector(norms);
  const int64_t b = std::min<int64_t>(opt.boundary_rows, (P - 2) / 4);  // leave an interior at least half the rows
  out.boundary.clear();
  if (b < 1) return;
  auto inner_norms = norms.slice(0, b, P - b);
  auto adj = torch::tensor(out.adjacent_cosines, torch::kFloat64);  // (P−1,)
  auto inner_adj = adj.slice(0, b, P - 1 - b);                      // pairs fully inside
  const double nm = inner_norms.mean().item<double>(), ns = inner_norms.std().item<double>();
  const double am = inner_adj.mean().item<double>(), as = inner_adj.std().item<double>();
  const Rounding rounding(row_rounding(W));
  for (int64_t i = 0; i < P; ++i) {
    if (i >= b && i < P - b) continue;
    BoundaryRow r;
    r.position = i + out.row_offset;
    r.norm = out.row_norms[i];
    r.norm_z = z_score(r.norm, nm, ns, rounding.norm(r.norm, nm));
    r.neighbour_cosine = i < b ? out.adjacent_cosines[i] : out.adjacent_cosines[i - 1];  // inward neighbour
    r.cosine_z = z_score(r.neighbour_cosine, am, as, rounding.cosine(r.neighbour_cosine, am));
    char buf[256];
    if (std::abs(r.norm_z) > opt.outlier_z) {
      std::snprintf(buf, sizeof buf, "row norm %.4g (z = %+.1f against the interior's %.4g ± %.2g)", r.norm, r.norm_z,
                    nm, ns);
      r.reason = buf;
    }
    if (std::abs(r.cosine_z) > opt.outlier_z) {
      std::snprintf(buf, sizeof buf, "cosine to its neighbour %.3f (z = %+.1f against the interior's %.3f ± %.2g)",
                    r.neighbour_cosine, r.cosine_z, am, as);
      r.reason += (r.reason.empty() ? "" : "; ") + std::string(buf);
    }
    r.outlier = !r.reason.empty();
    out.boundary.push_back(r);
  }
}

void heavy_rows(const torch::Tensor& W, Analysis& out) {
  const std::vector<double> centred = to_vector((W - W.mean(0, true)).pow(2).sum(1));  // (P,)
  const double total = std::accumulate(centred.begin(), centred.end(), 0.0);
  out.heavy_rows.clear();
  for (size_t i = 0; i < centred.size() && total > 0; ++i)
    if (centred[i] >= kHeavyRowShare * total)
      out.heavy_rows.push_back({static_cast<int64_t>(i) + out.row_offset, centred[i] / total});
  std::sort(out.heavy_rows.begin(), out.heavy_rows.end(),
            [](const HeavyRow& l, const HeavyRow& r) { return l.share > r.share; });
}

}  // namespace metrics
}  // namespace poslab
