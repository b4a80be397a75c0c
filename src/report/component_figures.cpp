// The figures of the table's components along position: the periodogram (its power by frequency), the top
// principal components as curves, and the rows along the helix (or circle) the analysis found.
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <optional>

#include "report/figures.h"

namespace poslab {

namespace {

constexpr const char* kUnframe = "  set autoscale x\n  set autoscale y\n";

// Curves each in units of its own standard deviation (about its mean), each pointing away from the first position,
// and the positions where either of the first two lies beyond kSdFrame.
// The positions a figure's frame (±kSdFrame) leaves out: how many, and the first four, named in its caption.
struct Outside {
  int64_t n = 0;
  std::string rows;  // "0, 1"
  void add(int64_t position) {
    if (++n <= 4) rows += fmt::format("{}{}", n > 1 ? ", " : "", position);
  }
  // "position 0 beyond 3.5 sd{of} lies outside the frame", "2 positions (0, 1) beyond … lie …"
  std::string words(const std::string& of) const {
    return fmt::format("{} beyond {} sd{} {} outside the frame",
                       n == 1 ? "position " + rows : fmt::format("{} positions ({}{})", n, rows, n > 4 ? ", …" : ""),
                       kSdFrame, of, n == 1 ? "lies" : "lie");
  }
};

struct InSd {
  std::array<std::vector<double>, 3> curves;
  Outside outside;
};

// The sign that turns curve `c` (about `centre`) to point away from the first position, its first value ≤ centre:
// an SVD's signs are arbitrary, and the figures and the watch page draw every axis so.
double away_from_first(const std::vector<double>& c, double centre) { return !c.empty() && c[0] > centre ? -1.0 : 1.0; }

InSd in_sd(const std::array<const std::vector<double>*, 3>& src, int64_t row_offset) {
  InSd out;
  for (int i = 0; i < 3; ++i) {
    if (!src[i]) continue;
    const std::vector<double>& c = *src[i];
    double mean = 0, sq = 0;
    for (double v : c) mean += v / static_cast<double>(c.size());
    for (double v : c) sq += (v - mean) * (v - mean);
    const double sd = std::sqrt(sq / static_cast<double>(c.size()));
    const double sign = away_from_first(c, mean);
    for (double v : c) out.curves[i].push_back(sd > 0 ? sign * (v - mean) / sd : 0.0);
  }
  for (size_t p = 0; p < out.curves[0].size() && p < out.curves[1].size(); ++p)
    if (std::abs(out.curves[0][p]) > kSdFrame || std::abs(out.curves[1][p]) > kSdFrame)
      out.outside.add(static_cast<int64_t>(p) + row_offset);
  return out;
}

// " (step 1500)" after "the table" in a caption: which of a run's snapshots; "" for one table's report, whose series
// is the table itself.
std::string which(const Series& s) { return s.label == "table" ? "" : " (" + s.label + ")"; }

// Component c's curve along position (1-based), or nullptr where the analysis kept none.
const std::vector<double>* projection(const Analysis& a, int c) {
  const auto& pcs = a.pc_frequencies;
  return c >= 1 && c <= static_cast<int>(pcs.size()) && !pcs[c - 1].projection.empty() ? &pcs[c - 1].projection
                                                                                       : nullptr;
}

// "; position 0 beyond 3.5 sd … lies outside the frame", or "".
std::string outside_words(const InSd& s) {
  return s.outside.n == 0 ? "" : "; " + s.outside.words(" of the circle's axes");
}

}  // namespace

Figure periodogram_figure(const std::vector<std::pair<int64_t, const Analysis*>>& snapshots) {
  const bool over_training = snapshots.size() > 1;
  Figure f{
      "periodogram",
      over_training ? "Periodogram, over training" : "Periodogram",
      std::string("The share of the centred table's power at each frequency along position (summed over its "
                  "dimensions, so over all its components)") +
          (over_training ? ", one curve per snapshot coloured by training step. Noise spreads its power evenly; as "
                           "the table forms, the power gathers at a few low frequencies."
                         : ". Noise spreads its power evenly; a smooth table holds it at a few low frequencies."),
      {},
      {}};
  std::string d = "# cycles_per_table share step\n";
  for (const auto& [step, a] : snapshots) {
    for (size_t k = 0; k < a->periodogram.size(); ++k)
      d += fmt::format("{} {} {}\n", k + 1, gp_number(a->periodogram[k]), step);
    d += "\n\n";
  }
  f.data["periodogram.dat"] = d;
  f.script = both_formats(
      f.name, std::string(kPalette) +
                  "  set xlabel 'frequency (cycles over the table)'\n  set ylabel 'share of the power'\n"
                  "  set logscale x\n  set autoscale xfix\n  set grid\n" +
                  (over_training ? step_cbrange(snapshots.front().first, snapshots.back().first) +
                                       "  set cblabel 'training step'\n  plot 'periodogram.dat' using 1:2:3 "
                                       "with lines lw 1.5 lc palette notitle\n"
                                 : "  plot 'periodogram.dat' using 1:2 with linespoints pt 7 ps 0.5 "
                                   "lw 1.5 notitle\n") +
                  "  unset logscale x\n");
  return f;
}

Figure principal_components_figure(const Series& s) {
  Figure f{"principal_components",
           "Top principal components along position",
           "The table's positions" + which(s) +
               " projected on its first four principal components, each in units of its own standard deviation so "
               "that a component of a few per cent shows its shape beside a ramp of most of the variance (the key "
               "gives each one's share), framed at ±3.5 sd at most; with the period of each one's own strongest "
               "frequency (≥ twice the rows: a ramp or a half wave; a circle's two components each have their own, "
               "and the pair turns at the period the analysis names). Each is signed so that the first position is "
               "at or below 0, as the helix figure and the watch page draw them. GPT-2's table shows smooth curves "
               "of a few different frequencies; noise shows jagged ones.",
           {},
           {}};
  std::string d = "# position pc1 pc2 pc3 pc4\n";
  std::vector<const PCFrequency*> pcs;  // the first four (the analysis keeps their projections)
  for (const auto& pc : s.analysis->pc_frequencies)
    if (pcs.size() < 4 && pc.component == static_cast<int>(pcs.size()) + 1 && !pc.projection.empty())
      pcs.push_back(&pc);
  const size_t P = pcs.empty() ? 0 : pcs[0]->projection.size();
  // each in units of its own sd (the projections are of the centred table: mean 0), signed so that its first row is
  // at or below 0, as the helix figure's axes
  std::vector<double> by;
  for (const auto* pc : pcs) {
    double ss = 0;
    for (double v : pc->projection) ss += v * v;
    const double sd = std::sqrt(ss / static_cast<double>(std::max<size_t>(P, 1)));
    by.push_back(away_from_first(pc->projection, 0.0) / (sd > 0 ? sd : 1.0));
  }
  Outside outside;  // rows beyond the frame on some component
  for (size_t i = 0; i < P; ++i) {
    d += std::to_string(i + s.analysis->row_offset);
    bool beyond = false;
    for (size_t k = 0; k < pcs.size(); ++k) {
      const double v = by[k] * pcs[k]->projection[i];
      d += " " + gp_number(v);
      beyond = beyond || std::abs(v) > kSdFrame;
    }
    d += "\n";
    if (beyond) outside.add(static_cast<int64_t>(i) + s.analysis->row_offset);
  }
  if (outside.n > 0) {
    std::string words = outside.words("");
    words[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(words[0])));  // a sentence of its own
    f.caption += " " + words + ".";
  }
  f.data["pcs.dat"] = d;
  std::string plots;
  for (size_t k = 0; k < pcs.size(); ++k) {
    // the search stops at half a cycle over the table: a ramp or a half wave, as the analysis prints it
    const bool slow = period_is_lower_bound(pcs[k]->cycles_per_position * static_cast<double>(P));
    // a circle's coordinate says so: its own period need not be the pair's
    std::string circle;
    for (const Circle& c : s.analysis->circles)
      if (c.first == static_cast<int>(k) + 1 || c.second == static_cast<int>(k) + 1) {
        circle = fmt::format("; a circle with PC{}, period {:.1f}",
                             c.first == static_cast<int>(k) + 1 ? c.second : c.first, c.period);
        break;
      }
    plots += fmt::format("{}'pcs.dat' using 1:{} with lines lw 2 title {}", k ? ", " : "", k + 2,
                         gp_quote(fmt::format("PC{} ({:.1f} %, {}{})", k + 1, 100 * pcs[k]->explained,
                                              slow ? fmt::format("period ≥{:.0f}", pcs[k]->period)
                                                   : fmt::format("period {:.1f}", pcs[k]->period),
                                              circle)));
  }
  f.script = both_formats(
      f.name,
      fmt::format(
          "  set xlabel 'position'\n  set ylabel 'projection on the component (sd)'\n"
          "  set grid\n  set xrange [{}:{}]\n  set yrange [-{}<*:*<{}]\n  set key below maxcols 2 samplen 2 height 1\n",
          s.analysis->row_offset, s.analysis->row_offset + std::max<int64_t>(1, static_cast<int64_t>(P)) - 1, kSdFrame,
          kSdFrame) +
          "  plot " + (plots.empty() ? std::string("0 notitle") : plots) + "\n  set autoscale x\n  set autoscale y\n");
  return f;
}

HelixAxes helix_axes(const Analysis& a) {
  HelixAxes out;
  if (a.helix && a.helix->rotated && a.helix->curves.size() == 3) {
    out.kind = "turned helix";
    out.components = helix_space(*a.helix);
    out.names = {"circle axis 1", "circle axis 2", "slow axis"};
    return out;
  }
  if (a.helix) {
    out.kind = "helix";
    out.components = {a.helix->circle.first, a.helix->circle.second, a.helix->slow};
  } else if (!a.circles.empty()) {
    out.kind = "circle";
    out.components = {a.circles[0].first, a.circles[0].second, 0};
  } else {
    return out;
  }
  for (int i = 0; i < 3; ++i)
    if (out.components[i]) out.names[i] = fmt::format("PC{}", out.components[i]);
  return out;
}

Figure helix_figure(const Series& s) {
  // The helix in 3-D when the analysis found one, else the strongest circle's plane, else the plane of PC1 and PC2.
  const Analysis& a = *s.analysis;
  const HelixAxes axes = helix_axes(a);
  int u = 1, v = 2, w = 0;
  if (!axes.kind.empty()) u = axes.components[0], v = axes.components[1], w = axes.components[2];
  std::string what =
      "the plane of its first two principal components, where GPT-2's positions trace an arc; noise is a cloud";
  const bool turned = axes.kind == "turned helix";
  if (turned) {
    what = fmt::format(
        "the space of PC{}, PC{} and PC{}, turned so that two axes turn in quadrature (period {:.1f}) and the third "
        "is the slow axis: the helix the analysis found ({:.0f} % of the variance)",
        u, v, w, a.helix->circle.period, 100 * a.helix->explained);
  } else if (a.helix) {
    what = fmt::format(
        "the space of PC{} and PC{}, which turn in quadrature (period {:.1f}), and PC{}, the slow axis: "
        "the helix the analysis found ({:.0f} % of the variance)",
        u, v, a.helix->circle.period, w, 100 * a.helix->explained);
  } else if (!a.circles.empty()) {
    what = fmt::format(
        "the plane of PC{} and PC{}, which turn in quadrature with a period of {:.1f} positions: a circle "
        "({:.0f} % of the variance)",
        u, v, a.circles[0].period, 100 * a.circles[0].explained);
  }
  Figure f{"helix",
           w ? "Positions along the helix" : fmt::format("Positions in the plane of PC{} and PC{}", u, v),
           "Each position of the table" + which(s) + " as a point in " + what +
               ", coloured by position and joined in order.",
           {},
           {}};
  const auto *x = projection(a, u), *y = projection(a, v), *z = w ? projection(a, w) : nullptr;
  // The axes' names: the components', or the turned helix's own axes.
  std::array<std::string, 3> name = {fmt::format("PC{}", u), fmt::format("PC{}", v), fmt::format("PC{}", w)};
  if (turned) {
    x = &a.helix->curves[0], y = &a.helix->curves[1], z = &a.helix->curves[2];
    name = axes.names;
  }
  // A circle's or helix's axes each in units of its own sd, as the circle rule reads them: a circle holding a few
  // per cent of the variance beside a ramp of most of it is a circle still, and so it shows.
  const bool scaled = (a.helix || !a.circles.empty()) && x && y;
  InSd unit;
  if (scaled) {
    unit = in_sd({x, y, z}, a.row_offset);
    x = &unit.curves[0], y = &unit.curves[1], z = z ? &unit.curves[2] : nullptr;
    for (std::string& n : name) n += " (sd)";
    f.caption +=
        " Each axis is in units of its own standard deviation, as the circle rule reads it" + outside_words(unit) + ".";
  }
  std::string d = turned ? fmt::format(
                               "# position circle_axis_1 circle_axis_2 slow_axis (turned within pc{}, pc{}, "
                               "pc{}; each figure keeps its own data)",
                               u, v, w)
                         : fmt::format("# position pc{} pc{}{} (each figure keeps its own data)", u, v,
                                       z ? fmt::format(" pc{}", w) : "");
  d += scaled ? "; each column in units of its sd, its first row ≤ 0\n" : "\n";
  // A row the frame leaves out stands between pairs of blank lines, a data set of its own: the path breaks there (no
  // line to a point not shown, drawn past the frame's edge in 3-D) and goes on from the next row inside. (One blank
  // line would start a scan line, which splot joins across into a mesh where every scan has as many rows.)
  if (x && y)
    for (size_t i = 0; i < x->size(); ++i) {
      const bool out = scaled && (std::abs((*x)[i]) > kSdFrame || std::abs((*y)[i]) > kSdFrame);
      d += fmt::format("{}{} {} {}{}\n{}", out ? "\n\n" : "", i + a.row_offset, gp_number((*x)[i]), gp_number((*y)[i]),
                       z ? " " + gp_number((*z)[i]) : "", out ? "\n\n" : "");
    }
  f.data["pcs_helix.dat"] = d;
  const std::string range =
      fmt::format("  set cbrange [{}:{}]\n", a.row_offset, a.row_offset + std::max<int64_t>(1, a.positions - 1));
  if (!x || !y) {  // a table of one column (or one with no variance): no plane to draw, and no data to plot
    f.caption = "The table" + which(s) + " has fewer than two principal components: there is no plane to draw.";
    f.script = both_formats(f.name,
                            "  set label 1 'fewer than two principal components' at graph 0.5, 0.5 center\n"
                            "  unset tics\n  plot [0:1][0:1] NaN notitle\n  unset label 1\n  set tics\n",
                            760, 620);
    return f;
  }
  const std::string frame =
      scaled ? fmt::format("  set xrange [{0}:{1}]\n  set yrange [{0}:{1}]\n", -kSdFrame, kSdFrame) : std::string();
  const std::string unframe = scaled ? kUnframe : "";
  if (z) {
    f.script = both_formats(f.name,
                            std::string(kPalette) +
                                fmt::format("  set xlabel '{}'\n  set ylabel '{}'\n  set zlabel '{}' rotate parallel\n",
                                            name[0], name[1], name[2]) +
                                range + frame +
                                // The base plane a little below the lowest z tic, and the x and y tics nudged off the
                                // corners: the three axes' end labels ran together ("-4-0.6").
                                "  set cblabel 'position'\n  set grid\n  set view 60, 30\n  set ticslevel 0.08\n"
                                "  set xtics offset -0.5, -0.3\n  set ytics offset 0.8, -0.3\n"
                                "  splot 'pcs_helix.dat' using 2:3:4 with lines lc rgb 'gray70' notitle, "
                                "'pcs_helix.dat' using 2:3:4:1 with points pt 7 ps 0.9 lc palette notitle\n"
                                "  set autoscale cb\n" +
                                unframe,
                            760, 620);
    return f;
  }
  f.script = both_formats(f.name,
                          std::string(kPalette) +
                              fmt::format("  set xlabel '{}'\n  set ylabel '{}'\n", name[0], name[1]) + range + frame +
                              "  set cblabel 'position'\n  set grid\n  set size ratio -1\n"
                              "  plot 'pcs_helix.dat' using 2:3 with lines lc rgb 'gray70' notitle, "
                              "'pcs_helix.dat' using 2:3:1 with points pt 7 ps 0.9 lc palette notitle\n"
                              "  set size noratio\n  set autoscale cb\n" +
                              unframe,
                          760, 620);
  return f;
}

std::optional<Figure> circle_plane_figure(const Series& s) {
  const Analysis& a = *s.analysis;
  if (!a.helix) return std::nullopt;
  const Helix& h = *a.helix;
  const bool turned = h.rotated && h.curves.size() == 3;
  const std::vector<double>* x = turned ? &h.curves[0] : projection(a, h.circle.first);
  const std::vector<double>* y = turned ? &h.curves[1] : projection(a, h.circle.second);
  if (!x || !y) return std::nullopt;
  const InSd unit = in_sd({x, y, nullptr}, a.row_offset);
  const std::array<std::string, 2> axis =
      turned ? std::array<std::string, 2>{"circle axis 1", "circle axis 2"}
             : std::array<std::string, 2>{fmt::format("PC{}", h.circle.first), fmt::format("PC{}", h.circle.second)};
  Figure f{"circle",
           "The helix's circle, seen along its slow axis",
           fmt::format("Each position of the table{} as a point in the plane of {} and {}, each in units of its own "
                       "standard deviation as the circle rule reads it, coloured by position and joined in order. "
                       "{:.0f} % of the pair's power turns round the centre at one frequency, {:.2f} turns over the "
                       "table (a period of {:.1f} positions); the rest, off that frequency, shows as the path's "
                       "wobble{}.",
                       which(s), axis[0], axis[1], 100 * h.circle.concentration, h.circle.frequency, h.circle.period,
                       outside_words(unit)),
           {},
           {}};
  std::string d = fmt::format("# position {} {} (each in units of its sd, its first row ≤ 0)\n",
                              turned ? "circle_axis_1" : fmt::format("pc{}", h.circle.first),
                              turned ? "circle_axis_2" : fmt::format("pc{}", h.circle.second));
  for (size_t p = 0; p < unit.curves[0].size(); ++p) {  // a row the frame leaves out breaks the path, as above
    const bool out = std::abs(unit.curves[0][p]) > kSdFrame || std::abs(unit.curves[1][p]) > kSdFrame;
    d += fmt::format("{}{} {} {}\n{}", out ? "\n\n" : "", static_cast<int64_t>(p) + a.row_offset,
                     gp_number(unit.curves[0][p]), gp_number(unit.curves[1][p]), out ? "\n\n" : "");
  }
  f.data["circle.dat"] = d;
  f.script = both_formats(
      f.name,
      std::string(kPalette) + fmt::format("  set xlabel '{} (sd)'\n  set ylabel '{} (sd)'\n", axis[0], axis[1]) +
          fmt::format("  set cbrange [{}:{}]\n", a.row_offset, a.row_offset + std::max<int64_t>(1, a.positions - 1)) +
          fmt::format("  set xrange [{0}:{1}]\n  set yrange [{0}:{1}]\n", -kSdFrame, kSdFrame) +
          "  set cblabel 'position'\n  set grid\n  set size ratio -1\n"
          "  plot 'circle.dat' using 2:3 with lines lc rgb 'gray70' notitle, "
          "'circle.dat' using 2:3:1 with points pt 7 ps 0.9 lc palette notitle\n"
          "  set size noratio\n  set autoscale cb\n" +
          kUnframe,
      620, 620);
  return f;
}

}  // namespace poslab
