#include "analysis/format.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include "analysis/metric_list.h"
#include "analysis/periodicity.h"
#include "util/plural.h"
#include "util/wrap.h"

namespace poslab {

nlohmann::json to_json(const Analysis& a) {
  using nlohmann::json;
  auto smooth = [](const Smoothness& s) {
    return json{{"first_difference_energy", s.first_difference_energy},
                {"second_difference_energy", s.second_difference_energy},
                {"adjacent_cosine", s.adjacent_cosine}};
  };
  json heavy = json::array();
  for (const auto& r : a.heavy_rows) heavy.push_back({{"position", r.position}, {"share", r.share}});
  json outliers = json::array(), boundary = json::array();
  for (const auto& r : a.boundary) {
    json row = {{"position", r.position}, {"norm", r.norm},
                {"norm_z", r.norm_z},     {"neighbour_cosine", r.neighbour_cosine},
                {"cosine_z", r.cosine_z}, {"outlier", r.outlier}};
    if (r.outlier) {
      row["reason"] = r.reason;
      outliers.push_back(row);
    }
    boundary.push_back(row);
  }
  json pcs = json::array();
  for (const auto& f : a.pc_frequencies) {
    json pc = {
        {"component", f.component},  {"explained", f.explained},     {"cycles_per_position", f.cycles_per_position},
        {"period", f.period},        {"power_share", f.power_share}, {"spectral_entropy", f.spectral_entropy},
        {"slow_share", f.slow_share}};
    if (!f.projection.empty()) pc["projection"] = f.projection;
    pcs.push_back(pc);
  }
  auto circle_json = [](const Circle& c) {
    return json{{"components", {c.first, c.second}},
                {"period", c.period},
                {"turns", c.frequency},
                {"explained", c.explained},
                {"concentration", c.concentration},
                {"circularity", c.circularity}};
  };
  json circles = json::array();
  for (const auto& c : a.circles) circles.push_back(circle_json(c));
  json helix = nullptr;
  if (a.helix) {
    const Helix& h = *a.helix;
    helix = {{"circle", circle_json(h.circle)},
             {"slow_component", h.slow},
             {"slow_period", h.slow_period},
             {"explained", h.explained},
             {"components", {h.circle.first, h.circle.second, h.slow}},
             {"rotated", h.rotated}};
    if (h.rotated) {  // the axes' weights on the three components, and their curves along position
      helix["axes"] = {{"circle_first", h.axes[0]}, {"circle_second", h.axes[1]}, {"slow", h.axes[2]}};
      helix["projections"] = h.curves;
    }
  }
  // The vectors and structures; every scalar metric comes from the one list (analysis/metric_list.h).
  json j = {
      {"source", a.source},
      {"positions", a.positions},
      {"dims", a.dims},
      {"row_offset", a.row_offset},
      {"singular_values", a.singular_values},
      {"singular_values_centered", a.singular_values_centered},
      {"explained_variance", a.explained_variance},
      {"cumulative_variance", a.cumulative_variance},
      {"adjacent_cosine_per_position", a.adjacent_cosines},
      {"cos_by_offset", a.cos_by_offset},
      {"half_offset", a.half_offset ? json(*a.half_offset) : json(nullptr)},
      {"shuffled", smooth(a.shuffled)},
      {"shuffle_control",
       {{"copies", a.shuffle_control.copies},
        {"mean", a.shuffle_control.mean},
        {"sd", a.shuffle_control.sd},
        {"z", a.shuffle_control.z}}},
      {"noise_floor",
       {{"beta", a.noise.beta},
        {"omega", a.noise.omega},
        {"threshold", a.noise.threshold},
        {"rounding_floor", a.noise.rounding_floor},
        {"noise_sigma", a.noise.noise_sigma},
        {"smallest_bound", std::isfinite(a.noise.smallest_bound) ? nlohmann::json(a.noise.smallest_bound) : nullptr},
        {"smallest_decides", a.noise.smallest_decides},
        {"signal_rank", a.noise.signal_rank},
        {"signal_share", a.noise.signal_share}}},
      {"row_norms", a.row_norms},
      {"boundary", boundary},
      {"boundary_outliers", outliers},
      {"heavy_rows", heavy},
      {"pc_frequencies", pcs},
      {"circles", circles},
      {"helix", helix},
      {"periodogram", a.periodogram},
      {"sinusoid_k", a.sinusoid_k},
      {"strongest_frequencies", a.strongest_frequencies},
      {"seconds", a.seconds},
  };
  for (const Metric& m : scalar_metrics()) {
    if (j.contains(m.key))
      throw std::logic_error(std::string("analysis JSON: the scalar metric '") + m.key +
                             "' has the name of a structure");
    j[m.key] = metric_json(m, a);
  }
  return j;
}

std::string one_line(const Analysis& a) {
  return fmt::format(
      "above noise {} ({:.0f}% of variance) | k90 {} | eff rank {:.1f} | adjacent cos {:.3f} (shuffled "
      "{:.3f} ± {:.3f}) | sinusoid R² {:.3f}",
      a.noise.signal_rank, 100 * a.noise.signal_share, a.k90, a.effective_rank, a.smooth.adjacent_cosine,
      a.shuffle_control.mean, a.shuffle_control.sd, a.sinusoid_r2);
}

std::string summary_text(const Analysis& a) {
  std::string s =
      fmt::format("{}: {} positions x {} dims{}\n", a.source, a.positions, a.dims,
                  a.row_offset ? fmt::format(" (rows {}:{})", a.row_offset, a.row_offset + a.positions) : "");
  const bool constant = std::all_of(a.singular_values_centered.begin(), a.singular_values_centered.end(),
                                    [](double v) { return !(v > 0); });
  if (constant)  // no variance about the mean row: every figure below is empty, not measured
    s += "  note          every row is the same: nothing varies along position, so the shares, ranks, correlations "
         "and periods below measure nothing\n";
  s += fmt::format("  spectrum      k50 {} | k90 {} | k95 {} | k99 {} (centred) | k90 uncentred {}\n", a.k50, a.k90,
                   a.k95, a.k99, a.k90_uncentered);
  const std::string rule =
      a.noise.rounding_floor ? "1e-6 × σ_1: no noise above rounding"
      : a.noise.smallest_decides
          ? fmt::format(
                "λ*(β) {:.3f} × √n × noise sd, β = {:.3f}; the noise sd bounded by the "
                "smallest σ: the median σ is signal",
                optimal_threshold_known_noise(a.noise.beta), a.noise.beta)
          : fmt::format("ω(β) {:.3f} × median σ, β = {:.3f}; Gavish-Donoho", a.noise.omega, a.noise.beta);
  s += fmt::format(
      "  noise floor   {} above it {} {:.1f}% of the variance | noise sd {:.3g} | threshold σ > {:.3g} ({})\n",
      counted(a.noise.signal_rank, "component"), a.noise.signal_rank == 1 ? "holds" : "hold",
      100 * a.noise.signal_share, a.noise.noise_sigma, a.noise.threshold, rule);
  for (const HeavyRow& r : a.heavy_rows)
    s += fmt::format(
        "  note          row {} alone holds {:.1f}% of the variance about the mean row: the spectrum, its ranks and "
        "the noise floor read that row more than the table's order\n",
        r.position, 100 * r.share);
  std::string top;
  for (size_t i = 0; i < std::min<size_t>(5, a.explained_variance.size()); ++i)
    top += fmt::format("{}{:.1f}%", i ? ", " : "", 100 * a.explained_variance[i]);
  s += fmt::format("  top PCs       {}\n", top);
  s += fmt::format(
      "  eff. dims     entropy rank {:.2f} | Roy-Vetterli {:.2f} | participation {:.2f} | stable rank {:.2f}\n",
      a.effective_rank, a.roy_vetterli_rank, a.participation_ratio, a.stable_rank);
  s += fmt::format(
      "  similarity    adjacent cos {:.4f} | cos at offset 1/2/4/8: {} | half-decay offset {}\n",
      a.smooth.adjacent_cosine,
      [&] {
        std::string o;
        for (size_t k : {1, 2, 4, 8})
          if (k <= a.cos_by_offset.size()) o += fmt::format("{}{:.3f}", o.empty() ? "" : "/", a.cos_by_offset[k - 1]);
        return o;
      }(),
      a.half_offset ? std::to_string(*a.half_offset)
                    : std::string("none (neighbours no more alike than shuffled rows)"));
  s += fmt::format(
      "  order         adjacent cos {:.4f} against {:.4f} ± {:.4f} for {} row-shuffled copies (z = {:.1f})\n",
      a.smooth.adjacent_cosine, a.shuffle_control.mean, a.shuffle_control.sd, a.shuffle_control.copies,
      a.shuffle_control.z);
  s += fmt::format(
      "  smoothness    1st-diff energy {:.3f} (shuffled {:.3f}, noise ≈ 2) | 2nd-diff {:.3f} (shuffled {:.3f}, noise ≈ "
      "6)\n",
      a.smooth.first_difference_energy, a.shuffled.first_difference_energy, a.smooth.second_difference_energy,
      a.shuffled.second_difference_energy);
  // At most eight components, one line of items that the terminal's wrapper packs: positions per cycle, the peak's
  // share of the power, spectral entropy H, and a slow one's slow share (what the helix rule reads for its slow axis).
  s += "  periods       (each component's positions per cycle, its peak's share of the power, spectral entropy H; "
       "slow: its variance's share in half a cycle and one cycle over the table, from 50%; ≥ twice the rows: a "
       "ramp or half wave, the period a lower bound)\n";
  // Components without variance (a table of lower rank than its width) have no period to give: rounding's. One above
  // the noise floor has variance, however little (a float64 table's smallest components hold 1e-10 of it).
  size_t varied = 0;
  while (varied < a.pc_frequencies.size() &&
         (a.pc_frequencies[varied].explained > kNoVariance || varied < static_cast<size_t>(a.noise.signal_rank)))
    ++varied;
  const size_t shown = std::min<size_t>(8, varied);
  std::string periods;
  for (size_t k = 0; k < shown; ++k) {
    const auto& f = a.pc_frequencies[k];
    // the search stops at half a cycle over the table: a ramp or a half wave reads "≥ 2P"
    const bool ramp = period_is_lower_bound(f.cycles_per_position * static_cast<double>(a.positions));
    periods += fmt::format("{}PC{} {}{:.1f} ({:.0f}%, H {:.2f}{})", k ? " | " : "                ", f.component,
                           ramp ? "≥" : "", f.period, 100 * f.power_share, f.spectral_entropy,
                           f.slow_share >= kSlowShare ? fmt::format(", slow {:.0f}%", 100 * f.slow_share) : "");
  }
  if (shown > 0) s += periods + "\n";
  if (shown < varied)
    s += fmt::format("                and {} more components: poslab analyze --json FILE lists them all\n",
                     varied - shown);
  if (varied < a.pc_frequencies.size())
    s += fmt::format("                PC{} onward: no variance (the centred table's rank is {})\n", varied + 1, varied);
  std::string circles;
  for (const auto& c : a.circles)
    circles += fmt::format("{}PC{}+PC{} period {:.1f} ({:.1f}% of variance, circularity {:.2f})",
                           circles.empty() ? "" : " | ", c.first, c.second, c.period, 100 * c.explained, c.circularity);
  s += fmt::format("  circles       {}\n",
                   circles.empty() ? std::string("none among the components above the noise floor") : circles);
  if (a.helix) {  // a slow component at half a cycle or less over the table (a ramp) reads "≥ 2P", as above
    const Helix& h = *a.helix;
    const std::string slow =
        fmt::format("(period {}{:.1f})",
                    period_is_lower_bound(static_cast<double>(a.positions) / h.slow_period) ? "≥" : "", h.slow_period);
    const std::array<int, 3> within = helix_space(h);
    s += h.rotated ? fmt::format(
                         "  helix         a circle (period {:.1f}) along a slow axis {}, turned apart within "
                         "PC{}, PC{} and PC{}: {:.1f}% of the variance\n",
                         h.circle.period, slow, within[0], within[1], within[2], 100 * h.explained)
                   : fmt::format("  helix         PC{}+PC{} (period {:.1f}) along PC{} {}: {:.1f}% of the variance\n",
                                 h.circle.first, h.circle.second, h.circle.period, h.slow, slow, 100 * h.explained);
  }
  // the strongest periods that hold power (a table of few frequencies has no fifth strongest)
  std::string strongest;
  size_t listed = 0;
  for (const int f : a.strongest_frequencies) {
    const size_t bin = static_cast<size_t>(f - 1);
    if (listed == 4 || bin >= a.periodogram.size() || !(a.periodogram[bin] > kNoVariance)) break;
    strongest += fmt::format("{}{:.1f}", listed++ ? ", " : "", static_cast<double>(a.positions) / f);
  }
  if (strongest.empty()) strongest = "none: no power";
  // White noise has P − 1 directions of variance once centred, 2K of them in the basis.
  const double noise_r2 =
      a.positions > 1 ? std::min(1.0, 2.0 * a.sinusoid_k / static_cast<double>(a.positions - 1)) : 1.0;
  s += fmt::format(
      "  sinusoids     R² of the {} lowest frequencies {:.3f} (white noise ≈ {:.3f}) | of the {} strongest {:.3f} "
      "(periods {}{})\n",
      a.sinusoid_k, a.sinusoid_r2, noise_r2, a.sinusoid_k, a.sinusoid_r2_strongest, strongest,
      listed == 4 && a.strongest_frequencies.size() > 4 ? ", …" : "");
  const auto share = [](double v) { return std::isnan(v) ? std::string("none") : fmt::format("{:.3f}", v); };
  s += fmt::format("  offsets       translation invariance {} (shuffled {}) | monotonicity {} (shuffled {})\n",
                   share(a.translation_invariance), share(a.shuffled_translation_invariance), share(a.monotonicity),
                   share(a.shuffled_monotonicity));
  std::string rebuilt, strides, shuffled;
  for (const auto& r : a.reconstruction) {
    strides += fmt::format("{}{}", strides.empty() ? "" : "/", r.stride);
    rebuilt += fmt::format("{}{:.3f}", rebuilt.empty() ? "" : "/", r.error);
    shuffled += fmt::format("{}{:.3f}", shuffled.empty() ? "" : "/", r.shuffled_error);
  }
  if (!strides.empty())
    s += fmt::format("  interpolation error keeping 1 row in {}: {} (shuffled {})\n", strides, rebuilt, shuffled);
  s += fmt::format("  position probe R² {:.3f}, MAE {:.2f} positions (shuffled R² {:.3f}, MAE {:.2f})\n", a.probe.r2,
                   a.probe.mae, a.shuffled_probe.r2, a.shuffled_probe.mae);
  std::string out;
  for (const auto& r : a.boundary)
    if (r.outlier) out += fmt::format("\n    position {}: {}", r.position, r.reason);
  s += "  boundaries    " +
       (out.empty() ? std::string("no outliers among the first and last rows") : "outliers:" + out) + "\n";
  return s;
}

std::string comparison_table(const std::vector<std::pair<std::string, const Analysis*>>& columns, size_t width) {
  const std::vector<Metric> metrics = headline_metrics();
  auto cols = [](const std::string& s) { return display_width(s); };
  size_t value_width = 8;  // each column as wide as its name or widest value, and a space
  for (const auto& [name, a] : columns) {
    value_width = std::max(value_width, cols(name));
    for (const Metric& m : metrics) value_width = std::max(value_width, cols(format_metric(m, *a)));
  }
  ++value_width;
  // The metrics' labels where they fit the width beside the columns, else their column names (docs/cli.md).
  size_t label_width = cols("metric");
  for (const Metric& m : metrics) label_width = std::max(label_width, cols(m.label));
  const bool labels = label_width + 1 + columns.size() * value_width <= width;
  if (!labels) {
    label_width = cols("metric");
    for (const Metric& m : metrics) label_width = std::max(label_width, cols(m.column));
  }
  auto left = [&](const std::string& text) { return text + std::string(label_width + 1 - cols(text), ' '); };
  auto right = [&](const std::string& text) { return std::string(value_width - cols(text), ' ') + text; };
  std::string s = left("metric");
  for (const auto& [name, a] : columns) s += right(name);
  s += "\n";
  for (const Metric& m : metrics) {
    s += left(labels ? m.label : m.column);
    for (const auto& [name, a] : columns) s += right(format_metric(m, *a));
    s += "\n";
  }
  return s;
}

}  // namespace poslab
