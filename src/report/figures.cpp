#include "report/figures.h"

#include <nlohmann/json.hpp>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "util/plural.h"

namespace poslab {

std::string both_formats(const std::string& name, const std::string& body, int width, int height) {
  return fmt::format(
      "set datafile missing 'NaN'\n"
      "if (!exists(\"out_suffix\")) out_suffix = ''\n"  // poslab's run: each figure to a temporary file first
      "do for [fmt in \"png svg\"] {{\n"
      "  if (fmt eq \"png\") {{ set terminal pngcairo size {w},{h} enhanced font 'sans,11' }}\n"
      "  else {{ set terminal svg size {w},{h} enhanced font 'sans,11' background rgb 'white' }}\n"
      "  set output '{n}.'.fmt.out_suffix\n"
      "{b}"
      "  unset output\n"
      "}}\n",
      fmt::arg("w", width), fmt::arg("h", height), fmt::arg("n", name), fmt::arg("b", body));
}

namespace {

std::string quote(const std::string& s) { return gp_quote(s); }

// Writes one data file per series ("PREFIX_LABEL.dat", rows from `rows`) and returns the plot clauses.
template <typename Rows>
std::string series_plots(
    Figure& f, const std::vector<Series>& series, const std::string& prefix, const std::string& header,
    const std::string& style, Rows rows,
    std::string (*title)(const Series&) = [](const Series& s) { return s.label; }) {
  std::string plots;
  for (const auto& s : series) {
    const std::string file = data_file(f, prefix, s.label);
    f.data[file] = "# " + header + "\n" + rows(*s.analysis);
    // noenhanced: a label is text as it is ("rows0_63" is no subscript).
    plots += fmt::format("{}'{}' using 1:2 with {} title {} noenhanced", plots.empty() ? "" : ", ", file, style,
                         quote(title(s)));
  }
  return plots;
}

}  // namespace

const char* const kPalette =
    "  set palette defined (0 '#440154', 0.25 '#3b528b', 0.5 '#21918c', 0.75 '#5ec962', 1 '#fde725')\n";

const char* const kCosinePalette =
    "  set palette defined (0 '#2166ac', 1 '#67a9cf', 2 '#d1e5f0', 3 '#f7f7f7', 4 '#fddbc7', 5 '#ef8a62', "
    "6 '#b2182b')\n";

std::string gp_number(double v) { return std::isfinite(v) ? fmt::format("{:.8g}", v) : "NaN"; }

std::string yrange_if_flat(const std::vector<double>& values) {
  double low = INFINITY, high = -INFINITY;
  for (double v : values)
    if (std::isfinite(v)) low = std::min(low, v), high = std::max(high, v);
  // The same as gnuplot reads them: equal in their 8 significant digits (gp_number).
  if (!(low <= high) || high - low > 1e-7 * std::max(std::abs(low), std::abs(high))) return "";
  if (high == 0) return "  set yrange [0:1]\n";
  const double mid = 0.5 * (low + high), margin = std::max(0.1 * std::abs(mid), 1e-3);
  return fmt::format("  set yrange [{}:{}]\n", gp_number(mid - margin), gp_number(mid + margin));
}

std::string gp_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string gp_slug(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

std::string data_file(const Figure& f, const std::string& prefix, const std::string& label) {
  const std::string stem = prefix + "_" + gp_slug(label);
  std::string file = stem + ".dat";
  for (int n = 2; f.data.count(file) > 0; ++n) file = stem + "_" + std::to_string(n) + ".dat";
  return file;
}

Figure spectrum_figure(const std::vector<Series>& series, const Series* floor_of) {
  Figure f{"spectrum",
           "Singular-value spectrum",
           "Singular values of each centred table (its mean row taken out, as the analysis reads it), divided by its "
           "largest, on a log scale (cut at 10⁻⁴). A random table's spectrum is flat and spread out; a low-rank "
           "table's falls steeply after its first few components.",
           {},
           {}};
  const std::string plots =
      series_plots(f, series, "spectrum", "k sigma_k/sigma_1 (centred)", "lines lw 2", [](const Analysis& a) {
        std::string d;
        const auto& sv = a.singular_values_centered;
        for (size_t k = 0; k < sv.size(); ++k)
          d += fmt::format("{} {}\n", k + 1, gp_number(sv[k] / std::max(sv[0], 1e-300)));
        return d;
      });
  // One table's noise floor (the run's last snapshot's): the components above it are the ones counted as signal.
  std::string floor;
  if (floor_of && !floor_of->analysis->singular_values_centered.empty()) {
    const Analysis& a = *floor_of->analysis;
    const double at = a.noise.threshold / std::max(a.singular_values_centered[0], 1e-300);
    floor = fmt::format(", {} with lines dt 2 lw 1.5 lc rgb '#b5651d' title {} noenhanced", gp_number(at),
                        quote(fmt::format("noise floor of {} ({} above it)", floor_of->label, a.noise.signal_rank)));
    f.caption += fmt::format(
        " The dashed line is {}'s noise floor (Gavish–Donoho): what stands above it is counted as signal ({}).",
        floor_of->label, counted(a.noise.signal_rank, "component"));
  }
  f.script = both_formats(f.name,
                          "  set logscale y\n  set format y '10^{%T}'\n  set yrange [1e-4:1.5]\n  set autoscale xfix\n"
                          "  set xlabel 'component k'\n"
                          "  set ylabel 'singular value {/Symbol s}_k / {/Symbol s}_1'\n  set key below\n  set grid\n"
                          "  plot " +
                              plots + floor + "\n  unset logscale y\n  set format y '%g'\n  set autoscale y\n");
  return f;
}

Figure cumulative_variance_figure(const std::vector<Series>& series) {
  Figure f{
      "cumulative_variance",
      "Cumulative explained variance",
      "Share of the centred table's variance held by its first k principal components; the dashed line marks 90 %. "
      "The further left a curve crosses it, the fewer components the table needs.",
      {},
      {}};
  const std::string plots = series_plots(
      f, series, "cumvar", "k cumulative_share_percent", "lines lw 2",
      [](const Analysis& a) {
        std::string d = "0 0\n";
        for (size_t k = 0; k < a.cumulative_variance.size(); ++k)
          d += fmt::format("{} {}\n", k + 1, gp_number(100 * a.cumulative_variance[k]));
        return d;
      },
      [](const Series& s) { return fmt::format("{} (k90 = {})", s.label, s.analysis->k90); });
  f.script = both_formats(f.name,
                          "  set xlabel 'number of principal components k'\n  set ylabel 'explained variance (%)'\n"
                          "  set yrange [0:100]\n  set autoscale xfix\n  set key bottom right\n  set grid\n"
                          "  plot " +
                              plots + ", 90 with lines dt 2 lc rgb 'gray40' title '90 %'\n  set autoscale y\n");
  return f;
}

Figure similarity_heatmaps_figure(const std::vector<Series>& tables, const std::string& name) {
  Figure f{
      name,
      "Position-similarity heatmaps",
      "Cosine similarity between the rows of the table for every pair of positions, on one colour scale from −1 "
      "(blue) through 0 (white) to 1 (red), as the watch page draws it. Noise shows only the diagonal; a smooth table "
      "shows a red band that widens along it.",
      {},
      {}};
  std::string body = kCosinePalette;
  const int64_t P = tables.empty() ? 0 : tables[0].analysis->positions;
  // positions as the table numbers them (rows 1:64 of GPT-2's are positions 1 to 63), as the other figures do
  const int64_t first = tables.empty() ? 0 : tables[0].analysis->row_offset;
  body += fmt::format(
      "  set cbrange [-1:1]\n  set cblabel 'cosine similarity'\n  set size ratio -1\n"
      "  set xlabel 'position j'\n  set ylabel 'position i'\n"
      "  set xrange [{1}-0.5:{1}+{0}-0.5]\n  set yrange [{1}+{0}-0.5:{1}-0.5]\n",
      P, first);
  if (tables.size() > 1) body += fmt::format("  set multiplot layout 1,{}\n", tables.size());
  for (const auto& s : tables) {
    const std::string file = data_file(f, name == "similarity" ? "cos" : name, s.label);
    const auto& M = s.analysis->cosine_matrix;
    std::string d;
    if (M.defined()) {
      auto m = M.to(torch::kFloat64).contiguous();
      const int64_t P = m.size(0);
      const double* p = m.data_ptr<double>();
      for (int64_t i = 0; i < P; ++i) {
        for (int64_t j = 0; j < P; ++j) d += (j ? " " : "") + fmt::format("{:.4f}", p[i * P + j]);
        d += "\n";
      }
    }
    f.data[file] = d;
    body += fmt::format("  set title {} noenhanced\n  plot '{}' matrix using ($1+{}):($2+{}):3 with image notitle\n",
                        quote(s.label), file, first, first);
  }
  if (tables.size() > 1) body += "  unset multiplot\n";
  body += "  set autoscale xy\n  set size noratio\n";
  f.script = both_formats(f.name, body, tables.size() > 2 ? 1500 : tables.size() > 1 ? 1100 : 640, 520);
  return f;
}

std::string step_cbrange(int64_t first, int64_t last) {
  return last > first ? fmt::format("  set cbrange [{}:{}]\n", first, last) : "";
}

Figure cos_by_offset_figure(const std::vector<TrajectoryPoint>& points) {
  Figure f{"cos_by_offset",
           "Similarity by distance, over training",
           "Mean cosine similarity of positions k apart, one curve per snapshot, coloured by training step. At step 0 "
           "it lies near 0: random rows are nearly orthogonal (each pair's cosine about ±1/√n_embd), and the curve "
           "is noisiest at the largest k, where the fewest pairs are averaged. As the table learns, nearby positions "
           "become similar and the curve falls with distance.",
           {},
           {}};
  std::string d = "# offset mean_cosine step\n";
  for (const auto& p : points) {
    const auto& c = p.analysis.cos_by_offset;
    for (size_t k = 0; k < c.size(); ++k) d += fmt::format("{} {} {}\n", k + 1, gp_number(c[k]), p.step);
    d += "\n\n";
  }
  f.data["cos_by_offset.dat"] = d;
  f.script = both_formats(
      f.name, std::string(kPalette) +
                  "  set xlabel 'offset k (positions)'\n  set ylabel 'mean cos(w_i, w_{i+k})'\n  set autoscale xfix\n"
                  "  set cblabel 'training step'\n  set grid\n" +
                  (points.empty() ? std::string() : step_cbrange(points.front().step, points.back().step)) +
                  "  plot 'cos_by_offset.dat' using 1:2:3 with lines lw 1.5 lc palette notitle\n");
  return f;
}

Figure row_norms_figure(const std::vector<Series>& series) {
  Figure f{
      "row_norms",
      "Row norm by position",
      "The length of each position's vector. Boundary effects show as the first (or last) positions standing apart "
      "from the interior.",
      {},
      {}};
  const std::string plots =
      series_plots(f, series, "norms", "position norm", "linespoints pt 7 ps 0.5 lw 1.5", [](const Analysis& a) {
        std::string d;
        for (size_t i = 0; i < a.row_norms.size(); ++i)
          d += fmt::format("{} {}\n", i + a.row_offset, gp_number(a.row_norms[i]));
        return d;
      });
  const int64_t first = series.empty() ? 0 : series[0].analysis->row_offset;
  const int64_t last = series.empty() ? 1 : first + series[0].analysis->positions - 1;
  std::vector<double> norms;
  for (const Series& s : series) norms.insert(norms.end(), s.analysis->row_norms.begin(), s.analysis->row_norms.end());
  f.script = both_formats(f.name, fmt::format("  set xlabel 'position'\n  set ylabel 'row norm ||w_i||'\n  set grid\n"
                                              "  set xrange [{}:{}]\n",
                                              first, last) +
                                      yrange_if_flat(norms) + "  plot " + plots + "\n  set autoscale x\n");
  return f;
}

Figure trajectory_figure(const std::vector<TrajectoryPoint>& points, const std::vector<MetricsRecord>& metrics) {
  Figure f{
      "trajectory",
      "How the structure emerges during training",
      "Over training steps: the components above the noise floor (Gavish–Donoho) beside k90, their share of the "
      "variance, the adjacent-position cosine beside the row-shuffled copies' mean ± sd, and the train and val loss.",
      {},
      {}};
  std::string d = "# step k90 signal_rank signal_share adjacent_cosine shuffled_mean shuffled_sd effective_rank\n";
  for (const auto& p : points)
    d += fmt::format("{} {} {} {} {} {} {} {}\n", p.step, p.analysis.k90, p.analysis.noise.signal_rank,
                     gp_number(p.analysis.noise.signal_share), gp_number(p.analysis.smooth.adjacent_cosine),
                     gp_number(p.analysis.shuffle_control.mean), gp_number(p.analysis.shuffle_control.sd),
                     gp_number(p.analysis.effective_rank));
  f.data["trajectory.dat"] = d;
  std::string loss = "# step batch_loss eval_train_loss eval_val_loss\n";
  for (const MetricsRecord& r : metrics)
    loss += fmt::format("{} {} {} {}\n", r.step, gp_number(r.loss), gp_number(r.train_loss), gp_number(r.val_loss));
  f.data["loss.dat"] = loss;
  f.script = both_formats(
      f.name,
      // Keys below the panels (no corner stays clear of every curve) and a margin on both sides of the steps (the
      // first and last error bars were cut in half by the edges).
      "  set multiplot layout 2,2\n  set grid\n  set xlabel 'training step'\n"
      "  set autoscale xfix\n"
      "  set offsets graph 0.03, graph 0.03, 0, 0\n"
      "  set title 'components'\n  set ylabel 'components'\n  set key below samplen 2 width -2 height 1\n"
      "  plot 'trajectory.dat' using 1:3 with linespoints pt 7 ps 0.6 lw 2 title 'above the noise floor', "
      "'trajectory.dat' using 1:2 with linespoints pt 6 ps 0.6 lw 1 title 'k90 (noise included)'\n"
      "  set title 'share of the variance above the noise floor'\n  set ylabel 'signal share'\n  set yrange [0:1]\n"
      "  plot 'trajectory.dat' using 1:4 with linespoints pt 7 ps 0.6 lw 2 notitle\n  set autoscale y\n"
      "  set title 'adjacent-position cosine'\n  set ylabel 'mean cos(w_i, w_{i+1})'\n"
      "  plot 'trajectory.dat' using 1:5 with linespoints pt 7 ps 0.6 lw 2 title 'table', "
      "'trajectory.dat' using 1:6:7 with yerrorlines pt 7 ps 0.4 lw 1 title 'row-shuffled copies (mean ± sd)'\n"
      "  set title 'loss'\n  set ylabel 'cross-entropy (nats/token)'\n" +
          (metrics.empty()  // a folder of snapshots alone: an empty panel that says so
               ? std::string("  set xrange [0:1]\n  set yrange [0:1]\n  set label 1 'no losses: the run has no "
                             "metrics.jsonl' at graph 0.5,0.5 center\n  plot -1 notitle\n  unset label 1\n")
               : std::string("  plot 'loss.dat' using 1:2 with lines lc rgb '#bbbbbb' title 'batch', "
                             "'loss.dat' using 1:3 with linespoints pt 7 ps 0.6 lw 2 title 'train (eval)', "
                             "'loss.dat' using 1:4 with linespoints pt 6 ps 0.9 lw 2 dt 2 title 'val'\n")) +
          "  unset multiplot\n",
      1100, 760);
  return f;
}

Figure shift_loss_figure(const ShiftCurve& c, const std::string& split) {
  Figure f{
      "shift_loss",
      "Loss against where the windows start",
      "The same " + split +
          " windows read at table rows S … S + L − 1 for each start row S (poslab eval --shift): "
          "left, the mean loss against S; right, the loss at each position of the window, one curve per S. A model "
          "that relies on absolute position loses when its windows start anywhere but row 0.",
      {},
      {}};
  std::string d = "# shift loss\n";
  for (size_t i = 0; i < c.shifts.size(); ++i) d += fmt::format("{} {}\n", c.shifts[i], gp_number(c.loss[i]));
  f.data["shift_loss.dat"] = d;
  std::string plots;
  for (size_t i = 0; i < c.shifts.size(); ++i) {
    std::string p = "# position loss\n";
    for (size_t j = 0; j < c.by_position[i].size(); ++j) p += fmt::format("{} {}\n", j, gp_number(c.by_position[i][j]));
    const std::string file = fmt::format("shift_loss_{}.dat", c.shifts[i]);
    f.data[file] = p;
    plots +=
        fmt::format("{}'{}' using 1:2 with lines lw 2 title 'S = {}'", plots.empty() ? "" : ", ", file, c.shifts[i]);
  }
  // The left axis spans 0.1 nats at least, centred on the losses: a difference of a few thousandths drawn across the
  // whole panel would look like a model that leans on absolute position. The caption gives the spread.
  constexpr double kMinSpan = 0.1;
  std::string left_range;
  if (!c.loss.empty()) {
    const auto [lo, hi] = std::minmax_element(c.loss.begin(), c.loss.end());
    f.caption +=
        fmt::format(" The mean losses lie within {:.3f} nats of each other{}.", *hi - *lo,
                    *hi - *lo < kMinSpan ? fmt::format(" (the left axis spans {} nats at least)", kMinSpan) : "");
    if (*hi - *lo < kMinSpan)
      left_range = fmt::format("  set yrange [{}:{}]\n", gp_number(0.5 * (*lo + *hi) - kMinSpan / 2),
                               gp_number(0.5 * (*lo + *hi) + kMinSpan / 2));
  }
  f.script =
      both_formats(f.name,
                   "  set multiplot layout 1,2\n  set grid\n  set ylabel 'cross-entropy (nats/token)'\n" + left_range +
                       "  set xlabel 'start row S of the windows'\n  plot 'shift_loss.dat' using 1:2 with "
                       "linespoints pt 7 lw 2 notitle\n  set autoscale y\n"
                       // the key beside the panel: on the curves it hid their peaks
                       "  set xlabel 'position in the window'\n  set key outside right top vertical\n  set autoscale "
                       "xfix\n  plot " +
                       plots + "\n  unset multiplot\n  set key default\n",
                   1100, 460);
  return f;
}

Figure position_loss_figure(const std::vector<double>& loss, const std::string& split) {
  Figure f{"position_loss",
           "Loss at each position",
           "Mean " + split +
               " loss of the token predicted at each position of the context (poslab eval). The first "
               "positions see the least context before them; the curve shows how much each position gains from it.",
           {},
           {}};
  std::string d = "# position loss\n";
  for (size_t i = 0; i < loss.size(); ++i) d += fmt::format("{} {}\n", i, gp_number(loss[i]));
  f.data["position_loss.dat"] = d;
  f.script = both_formats(
      f.name,
      "  set xlabel 'position in the context'\n  set autoscale xfix\n  set ylabel 'cross-entropy (nats/token)'\n"
      "  set grid\n  plot 'position_loss.dat' using 1:2 with linespoints pt 7 ps 0.5 lw 2 notitle\n");
  return f;
}

}  // namespace poslab
