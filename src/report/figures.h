// The report's figures: each is a set of data files plus one gnuplot script that draws NAME.png and NAME.svg.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/grid.h"
#include "analysis/trajectory.h"
#include "run/run_files.h"

namespace poslab {

struct Figure {
  std::string name;  // file stem: NAME.gp, NAME.png, NAME.svg
  std::string title;
  std::string caption;                      // one or two sentences: what it shows
  std::map<std::string, std::string> data;  // file name -> content, written next to the script
  std::string script;                       // gnuplot script (runs in the report folder)
};

// The axes a table's helix or circle lies on, as the report's helix figure and the watch page's path draw them:
// the turned helix's own three (its curves; `components` the space it was turned within), else the helix's circle's
// two components and its slow one, else the strongest circle's two (components[2] 0), else none (`kind` "").
struct HelixAxes {
  std::string kind;                  // "turned helix", "helix", "circle" or ""
  std::array<int, 3> components{};   // 1-based component numbers
  std::array<std::string, 3> names;  // "PC2", … or "circle axis 1", "circle axis 2", "slow axis"
};
HelixAxes helix_axes(const Analysis& a);

// The frame of a figure whose axes are in sd units (a helix's, a circle's): ±3.5 sd; rows beyond it (a table's
// outlying first rows) are counted in its caption.
constexpr double kSdFrame = 3.5;

// For figure data and scripts: a number as gnuplot reads it ("NaN" when not finite), a gnuplot single-quoted
// string, a label made safe for a file name.
std::string gp_number(double v);
std::string gp_quote(const std::string& s);
std::string gp_slug(const std::string& s);

// "  set yrange [LOW:HIGH]\n" around the value when every finite value in `values` is the same to gnuplot's eye
// (in its 8 digits): gnuplot would widen the empty range with a warning, to [-1:1] around 0, drawing negative counts.
// [0:1] for 0, ±10 % (at least 1e-3) otherwise; "" when the values differ or there is none.
std::string yrange_if_flat(const std::vector<double>& values);

// The name of a new data file of figure `f` for the series `label`: "PREFIX_SLUG.dat", with "_2", "_3", … where two
// labels make one slug ("a b" and "a_b"), so that no series' data replaces another's.
std::string data_file(const Figure& f, const std::string& prefix, const std::string& label);
// A gnuplot script that draws `body` (set/plot commands, run in the report folder) once as NAME.png and once as
// NAME.svg, with the same size and font; 'NaN' in the data is a gap. `gnuplot NAME.gp` by hand writes them in place;
// run_gnuplot has them written to temporary files and commits them.
std::string both_formats(const std::string& name, const std::string& body, int width = 900, int height = 540);

// "  set cbrange [FIRST:LAST]\n" for a colour bar of training steps (gnuplot would round its end up past the last
// step: 1600 for a run of 1500); "" when there is one step.
std::string step_cbrange(int64_t first, int64_t last);

// The heatmaps' palette (viridis), as a gnuplot command line.
extern const char* const kPalette;
// Cosine similarity's palette on [-1, 1]: blue −1, white 0, red +1, the watch page's (report/panels.js DIVERGING).
extern const char* const kCosinePalette;

// A labelled analysis, one series of a figure.
struct Series {
  std::string label;
  const Analysis* analysis;
};

// The centred singular values of each series, and where `floor_of` is given, its noise floor as a dashed line.
Figure spectrum_figure(const std::vector<Series>& series, const Series* floor_of = nullptr);
Figure cumulative_variance_figure(const std::vector<Series>& series);
// 1 to 3 tables, one colour scale; `name` sets the figure's file stem.
Figure similarity_heatmaps_figure(const std::vector<Series>& tables, const std::string& name = "similarity");
Figure cos_by_offset_figure(const std::vector<TrajectoryPoint>& points);
// The periodogram of each (step, analysis): one curve per snapshot, coloured by step when there are several.
Figure periodogram_figure(const std::vector<std::pair<int64_t, const Analysis*>>& snapshots);
Figure principal_components_figure(const Series& s);
Figure helix_figure(const Series& s);
// The helix's circle seen along its slow axis (2-D, each axis in sd units); nullopt without a helix.
std::optional<Figure> circle_plane_figure(const Series& s);
Figure row_norms_figure(const std::vector<Series>& series);
// Trajectories over steps; the records of metrics.jsonl (may be none) add the train and val loss curves.
Figure trajectory_figure(const std::vector<TrajectoryPoint>& points, const std::vector<MetricsRecord>& metrics);
// Loss by position from `poslab eval` (read_position_loss).
Figure position_loss_figure(const std::vector<double>& loss, const std::string& split);
// Loss against the table row where the windows start (poslab eval --shift), and by position at each shift.
Figure shift_loss_figure(const ShiftCurve& curve, const std::string& split);

// A vision table's patch grid (report/grid_figures.cpp): mean similarity by (Δrow, Δcol), and one small map per
// patch of its cosine to every patch, laid out as the image.
Figure grid_offset_figure(const GridAnalysis& g);
Figure patch_maps_figure(const GridAnalysis& g);

}  // namespace poslab
