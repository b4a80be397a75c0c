#include "analysis/metric_list.h"

#include <spdlog/fmt/fmt.h>

#include <cmath>
#include <numeric>

namespace poslab {
namespace {

// Reconstruction error at `stride` (of the table or of its shuffled copy), NaN when the table is too short for it.
template <int Stride, bool Shuffled>
double reconstruction_at(const Analysis& a) {
  for (const auto& r : a.reconstruction)
    if (r.stride == Stride) return Shuffled ? r.shuffled_error : r.error;
  return NAN;
}

// The components above the noise floor: their spectral entropies weighted by their shares of the variance.
double signal_spectral_entropy(const Analysis& a) {
  double sum = 0, weight = 0;
  for (const auto& f : a.pc_frequencies)
    if (f.component <= a.noise.signal_rank) sum += f.explained * f.spectral_entropy, weight += f.explained;
  return weight > 0 ? sum / weight : NAN;
}

}  // namespace

const std::vector<Metric>& scalar_metrics() {
  using A = const Analysis&;
  static const std::vector<Metric> list = {
      {"signal_rank", "components above the noise floor", "signal rk", "{:.0f}", true, true,
       [](A a) { return double(a.noise.signal_rank); }, "spectrum"},
      {"signal_share", "variance share above the noise floor", "sig share", "{:.3f}", true, false,
       [](A a) { return a.noise.signal_share; }, "spectrum"},
      {"noise_sigma", "estimated noise level (per-entry sd)", "noise sd", "{:.4f}", false, false,
       [](A a) { return a.noise.noise_sigma; }},
      {"k50", "components for 50 %", "k50", "{:.0f}", false, true, [](A a) { return double(a.k50); }},
      {"k90", "components for 90 % (k90)", "k90", "{:.0f}", true, true, [](A a) { return double(a.k90); }, "spectrum"},
      {"k95", "components for 95 %", "k95", "{:.0f}", false, true, [](A a) { return double(a.k95); }},
      {"k99", "components for 99 %", "k99", "{:.0f}", false, true, [](A a) { return double(a.k99); }},
      {"k90_uncentered", "k90 of the uncentred table", "k90 unc", "{:.0f}", false, true,
       [](A a) { return double(a.k90_uncentered); }},
      {"effective_rank", "entropy effective rank", "eff rank", "{:.2f}", true, false,
       [](A a) { return a.effective_rank; }, "spectrum"},
      {"roy_vetterli_rank", "Roy-Vetterli rank", "RV rank", "{:.2f}", false, false,
       [](A a) { return a.roy_vetterli_rank; }},
      {"participation_ratio", "participation ratio", "part rat", "{:.2f}", false, false,
       [](A a) { return a.participation_ratio; }},
      {"stable_rank", "stable rank", "stable rk", "{:.2f}", false, false, [](A a) { return a.stable_rank; }},
      {"top_component_share", "top component's share", "PC1 share", "{:.3f}", false, false,
       [](A a) { return a.explained_variance.empty() ? NAN : a.explained_variance[0]; }},
      {"adjacent_cosine", "adjacent cosine", "adj cos", "{:.3f}", true, false,
       [](A a) { return a.smooth.adjacent_cosine; }, "order"},
      {"shuffled_adjacent_cosine", "adjacent cosine, row-shuffled copies (mean)", "shuffled", "{:.3f}", true, false,
       [](A a) { return a.shuffle_control.mean; }, "order"},
      {"shuffled_adjacent_cosine_sd", "adjacent cosine, row-shuffled copies (sd)", "shuf sd", "{:.4f}", false, false,
       [](A a) { return a.shuffle_control.sd; }},
      {"adjacent_cosine_z", "adjacent cosine above the shuffled copies (z)", "adj z", "{:.1f}", true, false,
       [](A a) { return a.shuffle_control.z; }, "order"},
      {"first_difference_energy", "first-difference energy", "1st diff", "{:.3f}", true, false,
       [](A a) { return a.smooth.first_difference_energy; }, "order"},
      {"second_difference_energy", "second-difference energy", "2nd diff", "{:.3f}", false, false,
       [](A a) { return a.smooth.second_difference_energy; }},
      {"translation_invariance", "translation invariance", "transl inv", "{:.3f}", true, false,
       [](A a) { return a.translation_invariance; }, "order"},
      {"shuffled_translation_invariance", "translation invariance, row-shuffled copy", "shuf TI", "{:.3f}", false,
       false, [](A a) { return a.shuffled_translation_invariance; }},
      {"monotonicity", "monotonicity", "monotone", "{:.3f}", true, false, [](A a) { return a.monotonicity; }, "order"},
      {"shuffled_monotonicity", "monotonicity, row-shuffled copy", "shuf mono", "{:.3f}", false, false,
       [](A a) { return a.shuffled_monotonicity; }},
      {"sinusoid_r2", "sinusoid R²", "sin R²", "{:.3f}", true, false, [](A a) { return a.sinusoid_r2; }, "form"},
      {"sinusoid_r2_strongest", "sinusoid R², K strongest frequencies", "sin R² st", "{:.3f}", false, false,
       [](A a) { return a.sinusoid_r2_strongest; }},
      {"pc1_period", "PC1's period (positions)", "PC1 per", "{:.1f}", false, false,
       [](A a) {
         return a.pc_frequencies.empty() || !(a.pc_frequencies[0].period > 0) ? NAN : a.pc_frequencies[0].period;
       }},
      {"signal_spectral_entropy", "spectral entropy of the components above the floor", "spec ent", "{:.3f}", false,
       false, signal_spectral_entropy},
      {"circle_count", "circles (component pairs in quadrature)", "circles", "{:.0f}", false, true,
       [](A a) { return double(a.circles.size()); }},
      {"circle_period", "the strongest circle's period (positions)", "circ per", "{:.1f}", false, false,
       [](A a) { return a.circles.empty() ? NAN : a.circles[0].period; }},
      {"circle_share", "the strongest circle's share of the variance", "circ shr", "{:.3f}", false, false,
       [](A a) { return a.circles.empty() ? NAN : a.circles[0].explained; }},
      {"helix_share", "the helix's share (circle and slow axis)", "helix shr", "{:.3f}", false, false,
       [](A a) { return a.helix ? a.helix->explained : NAN; }},
      {"interpolation_error_s2", "interpolation error, every 2nd row kept", "interp 2", "{:.3f}", false, false,
       reconstruction_at<2, false>},
      {"interpolation_error_s4", "interpolation error, every 4th row kept", "interp 4", "{:.3f}", true, false,
       reconstruction_at<4, false>, "form"},
      {"shuffled_interpolation_error_s4", "interpolation error (4th row), row-shuffled copy", "shuf int4", "{:.3f}",
       false, false, reconstruction_at<4, true>},
      {"interpolation_error_s8", "interpolation error, every 8th row kept", "interp 8", "{:.3f}", false, false,
       reconstruction_at<8, false>},
      {"interpolation_error_s16", "interpolation error, every 16th row kept", "interp 16", "{:.3f}", false, false,
       reconstruction_at<16, false>},
      {"shuffled_interpolation_error_s2", "interpolation error (2nd row), row-shuffled copy", "shuf int2", "{:.3f}",
       false, false, reconstruction_at<2, true>},
      {"shuffled_interpolation_error_s8", "interpolation error (8th row), row-shuffled copy", "shuf int8", "{:.3f}",
       false, false, reconstruction_at<8, true>},
      {"shuffled_interpolation_error_s16", "interpolation error (16th row), row-shuffled copy", "shuf i16", "{:.3f}",
       false, false, reconstruction_at<16, true>},
      {"probe_r2", "position probe R² (odd rows)", "probe R²", "{:.3f}", true, false, [](A a) { return a.probe.r2; },
       "form"},
      {"shuffled_probe_r2", "position probe R², row-shuffled copy", "shuf R²", "{:.3f}", true, false,
       [](A a) { return a.shuffled_probe.r2; }, "form"},
      {"probe_mae", "position probe mean abs. error (positions)", "probe MAE", "{:.2f}", false, false,
       [](A a) { return a.probe.mae; }},
      {"shuffled_probe_mae", "position probe MAE, row-shuffled copy", "shuf MAE", "{:.2f}", false, false,
       [](A a) { return a.shuffled_probe.mae; }},
      {"mean_row_norm", "mean row norm", "row norm", "{:.4f}", false, false,
       [](A a) {
         return a.row_norms.empty() ? NAN
                                    : std::accumulate(a.row_norms.begin(), a.row_norms.end(), 0.0) /
                                          static_cast<double>(a.row_norms.size());
       }},
  };
  return list;
}

std::vector<Metric> headline_metrics() {
  std::vector<Metric> out;
  for (const Metric& m : scalar_metrics())
    if (m.headline) out.push_back(m);
  return out;
}

std::string format_metric(const Metric& m, const Analysis& a) {
  const double v = m.value(a);
  if (!std::isfinite(v)) return "-";
  std::string s = fmt::format(fmt::runtime(m.format), v);
  // A small negative value that rounds to zero reads "0.000", not "-0.000".
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

nlohmann::json metric_json(const Metric& m, const Analysis& a) {
  const double v = m.value(a);
  if (!std::isfinite(v)) return nullptr;
  return m.integer ? nlohmann::json(static_cast<int64_t>(v)) : nlohmann::json(v);
}

}  // namespace poslab
