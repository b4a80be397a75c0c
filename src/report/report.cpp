#include "report/report.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "analysis/baselines.h"
#include "analysis/metric_list.h"
#include "analysis/probes.h"
#include "analysis/table_io.h"
#include "report/extension.h"
#include "report/figures.h"
#include "report/gnuplot.h"
#include "report/usage.h"
#include "report/watch.h"
#include "run/run_files.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/output_paths.h"
#include "util/signals.h"
#include "util/text.h"

namespace poslab {
namespace fs = std::filesystem;

namespace {

const char* kStyle = R"(
body { font-family: sans-serif; max-width: 1180px; margin: 2em auto; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
.source { color: #666; margin-top: 0; }
.verdict { font-size: 1.1em; padding: 0.8em 1em; border-left: 5px solid #21918c; background: #f2f8f8; }
.verdict.no { border-color: #b5651d; background: #fbf5ee; }
.verdict.present { border-color: #5b5bb5; background: #f3f3fb; }
.watch a { font-weight: bold; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { padding: 0.25em 0.8em; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child { text-align: left; }
figure { margin: 2em 0; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #444; max-width: 900px; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.9em; }
.wide { overflow-x: auto; max-width: 100%; }
small.null { color: #666; white-space: nowrap; }
.keys, .note { color: #444; font-size: 0.9em; max-width: 900px; }
)";

// In every page's head: a folder whose index.html has it holds poslab's own earlier page (check_report_folder).
constexpr const char* kGeneratorTag = "<meta name=\"generator\" content=\"poslab\">";
// A run report's last snapshot, in its page: run_report_is_current reads it.
constexpr const char* kLastSnapshotMark = "<!-- poslab: drawn from the snapshot of step ";

}  // namespace

void check_report_folder(const std::string& dir, const std::string& named, bool force, const std::string& kind) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw Error(named + " " + dir + ": is a file, not a folder to write a report into", "name a folder");
  if (const std::string run = run_record_of(dir); !run.empty())
    throw Error(
        named + " " + dir + ": is a folder of the training run in " + run + ", which no other command writes into",
        "name a folder outside the run's own record");
  // The run's own report (poslab report RUN writes it, not through here): another page there would replace it.
  const fs::path at = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  if (const std::string run = run_record_of(at.parent_path().string()); at.filename() == "report" && !run.empty())
    throw Error(named + " " + dir + ": is the report folder of the training run in " + run + ", which poslab report " +
                    run + " writes",
                "name a folder outside the run's own record");
  if (is_sweep_dir(dir))
    throw Error(
        named + " " + dir + ": is the folder of a sweep (it holds sweep.json), which only poslab sweep writes into",
        "name a folder outside it" + (kind == "compare" ? " (a comparison of that sweep alone goes to " +
                                                              (fs::path(dir) / "compare").string() + ")"
                                                        : std::string()));
  if (!fs::exists(dir, ec)) return;
  if (force) return;
  const fs::path index = fs::path(dir) / "index.html";
  if (fs::is_regular_file(index, ec)) {  // poslab's page, or one of a poslab before the tag ("<title>poslab …")
    const std::string page = read_file(index.string());
    if (page.find(kGeneratorTag) != std::string::npos || page.find("<title>poslab ") != std::string::npos) {
      if (page.find("<title>poslab " + kind + ":") != std::string::npos) return;
      const std::string other = kind == "report" ? "compare" : "report";
      if (page.find("<title>poslab " + other + ":") != std::string::npos)
        throw Error(named + " " + dir + ": holds the page of poslab " + other + " (index.html), which this " + kind +
                        " would replace",
                    "name another folder, or pass --force to write over it (files of the same name are replaced)");
      return;
    }
  }
  // Only what a page writes before gnuplot draws (its figures' data and scripts, gnuplot's logs): one whose drawing
  // failed (gnuplot missing), written again.
  bool sources = true;
  for (fs::directory_iterator it(dir, ec), end; sources && !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const auto ends = [&](const std::string& x) { return name.size() > x.size() && ends_with(name, x); };
    sources = it->is_regular_file(ec) && (ends(".dat") || ends(".gp") || ends(".gp.log"));
  }
  if (sources && !ec) return;
  if (const std::string held = folder_contents(dir); !held.empty())
    throw Error(named + " " + dir + ": holds " + held + " and no poslab page",
                "name a new folder, or pass --force to write into it (files of the same name are replaced)");
}

std::vector<std::string> draw_figures(const std::string& dir, const std::vector<Figure>& figures) {
  make_dirs(dir);
  std::vector<std::string> files;  // the figures a killed draw of these left half-written
  for (const auto& f : figures) {
    for (const char* ext : {".png", ".svg", ".gp"}) files.push_back(f.name + ext);
    for (const auto& d : f.data) files.push_back(d.first);
  }
  remove_dead_temporaries(dir, files);
  for (const auto& f : figures) {
    for (const auto& [file, content] : f.data) write_file_atomic((fs::path(dir) / file).string(), content);
    write_file_atomic((fs::path(dir) / (f.name + ".gp")).string(), f.script);
  }
  std::vector<std::string> names;
  for (const auto& f : figures) {
    run_gnuplot(dir, f.name + ".gp");
    names.push_back(f.name);
  }
  return names;
}

namespace {

// What the key metrics' control columns are, under the table.
constexpr const char* kControlsNote =
    "The controls, of the table's shape: random, a N(0, 0.02²) table; sinusoidal, the fixed sinusoidal table; "
    "handbook, a simulated trained table (a sinusoid of its own frequency per dimension, plus noise that fades "
    "along position); walk, a random walk along position (each row the last plus N(0, 0.02²) noise): smooth noise, "
    "which reads as smooth and low rank too, with circles (docs/analysis.md, \"Trajectory and verdict\").";

// The headline metrics of analysis/metric_list.h, one column per series, and the boundary outliers.
std::string metrics_table(const std::vector<Series>& columns) {
  std::string h = "<div class=\"wide\"><table>\n<tr><th>metric</th>";
  for (const auto& c : columns) h += "<th>" + html_escape(c.label) + "</th>";
  h += "</tr>\n";
  for (const Metric& m : headline_metrics()) {
    h += "<tr><td>" + html_escape(m.label) + "</td>";
    for (const auto& c : columns) h += "<td>" + format_metric(m, *c.analysis) + "</td>";
    h += "</tr>\n";
  }
  h += "<tr><td>boundary outliers (their positions)</td>";
  for (const auto& c : columns) {  // "none", "1 (position 0)", "2 (positions 0, 1)"
    std::string at;
    int n = 0;
    for (const auto& r : c.analysis->boundary)
      if (r.outlier) at += (n++ ? ", " : "") + std::to_string(r.position);
    const std::string s = n == 0 ? "none" : fmt::format("{} (position{} {})", n, n == 1 ? "" : "s", at);
    h += "<td>" + s + "</td>";
  }
  return h + "</tr>\n</table></div>\n";
}

}  // namespace

std::string report_page(const std::string& title, const std::string& source, const std::string& top,
                        const std::vector<Figure>& figures) {
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n" +
      std::string(kGeneratorTag) + "\n<title>" + html_escape(title) + "</title>\n<style>" + kStyle +
      "</style>\n</head>\n<body>\n<h1>" + html_escape(title) + "</h1>\n" + "<p class=\"source\">" +
      html_escape(source) + "</p>\n" + top;
  for (size_t i = 0; i < figures.size(); ++i) {
    const auto& f = figures[i];
    h += fmt::format(
        "<figure id=\"{n}\">\n<a href=\"{n}.svg\"><img src=\"{n}.png\" alt=\"{t}\"></a>\n<figcaption><b>Figure {i}. "
        "{t}.</b> {c} "
        "<a href=\"{n}.svg\">SVG</a> · <a href=\"{n}.gp\">gnuplot script</a></figcaption>\n</figure>\n",
        fmt::arg("n", f.name), fmt::arg("t", html_escape(f.title)), fmt::arg("c", html_escape(f.caption)),
        fmt::arg("i", i + 1));
  }
  return h + "</body>\n</html>\n";
}

namespace {
// "Half-change step: signal share 500, adjacent cosine 300, …": when each headline metric had moved half of its change.
std::string half_change_line(const std::vector<TrajectoryPoint>& points) {
  std::string items;
  const std::vector<HalfChange> hc = half_change_steps(points);  // in headline_metrics() order
  const std::vector<Metric> metrics = headline_metrics();
  for (size_t k = 0; k < hc.size(); ++k)
    if (hc[k].step) items += fmt::format("{}{} {}", items.empty() ? "" : ", ", metrics[k].label, *hc[k].step);
  if (items.empty()) return "";
  return "<p><b>Half-change step</b> (the first snapshot where a metric has moved half of its change over the run): " +
         html_escape(items) + ".</p>\n";
}

// Wang & Chen's probes on each named table (docs/analysis.md, "Position probes as the literature runs them"), with the
// random and sinusoidal tables of the same shape as controls; empty for tables of under 10 rows (the probes' 5 folds
// need them).
std::string probes_table(std::vector<std::pair<std::string, torch::Tensor>> tables, uint64_t seed) {
  const int64_t P = tables.front().second.size(0), d = tables.front().second.size(1);
  if (P < 10) return "";
  tables.emplace_back("random", random_table(P, d, kBaselineStd, kBaselineSeed));
  tables.emplace_back("sinusoidal", synthetic_table("sinusoidal", P, d, kBaselineSeed));
  std::string h =
      "<h2>Position probes</h2>\n<p>Wang &amp; Chen's probes (docs/analysis.md, “Position probes as the literature "
      "runs them”): least "
      "squares from a row to its index, 5-fold over the rows in a shuffled order, as the mean distance of "
      "the rounded prediction from the true index; and logistic regression on pairs of rows, "
      "“which comes first”, as held-out accuracy. Read both against the random row, not against 0.5 or the middle "
      "position: the test pairs share their rows with the training pairs, so even a random table scores well above "
      "0.5 on the relative probe, and with as many columns as rows the absolute probe fits noise, and may miss by more "
      "than the middle position does (its row below: no probe, the same guess for every row). These are not the key "
      "metrics' position probe, a ridge fit from the even rows to the odd rows' positions (docs/analysis.md).</p>\n"
      "<div class=\"wide\"><table>\n"
      "<tr><th>table</th>"
      "<th>absolute: mean error (positions)</th><th>relative: accuracy</th><th>pairs</th></tr>\n";
  for (const auto& [name, W] : tables) {
    const LiteratureProbes p = literature_probes(W, seed);
    h += fmt::format("<tr><td>{}</td><td>{:.2f}</td><td>{:.3f}</td><td>{}</td></tr>\n", html_escape(name),
                     p.absolute_mae, p.relative_accuracy, p.pairs);
  }
  // Knowing nothing: the middle index, rounded as the probe's predictions are, for every row.
  const double middle = std::round((static_cast<double>(P) - 1) / 2);
  double miss = 0;
  for (int64_t i = 0; i < P; ++i) miss += std::abs(static_cast<double>(i) - middle);
  h += fmt::format("<tr><td>the middle position {:.0f}, for every row</td><td>{:.2f}</td><td>–</td><td>–</td></tr>\n",
                   middle, miss / static_cast<double>(P));
  return h + "</table></div>\n";
}

}  // namespace

ReportResult write_run_report(const std::string& run_dir, const VerdictThresholds& thresholds) {
  AnalysisOptions opt;
  opt.keep_cosine_matrix = true;
  const std::vector<TrajectoryPoint> points = analyze_run(run_dir, opt);
  const Verdict verdict = judge(points, thresholds);
  const Analysis& first = points.front().analysis;
  const Analysis& mid = middle_snapshot(points).analysis;
  const Analysis& last = points.back().analysis;

  const RunFolder run(run_dir);
  std::string config_text;
  std::error_code ec;
  if (fs::is_regular_file(run.config(), ec)) config_text = read_file(run.config());
  const std::vector<Baseline> baselines = baseline_analyses(last.positions, last.dims, opt);
  const Analysis& random = baselines[0].analysis;
  const Analysis& sinus = baselines[1].analysis;
  const Analysis& handbook = baselines[2].analysis;
  const Analysis& walk = baselines[3].analysis;

  auto label = [](const TrajectoryPoint& p) { return "step " + std::to_string(p.step); };
  const Series s_first{label(points.front()), &first}, s_mid{label(middle_snapshot(points)), &mid},
      s_last{label(points.back()), &last}, s_random{"random", &random}, s_sin{"sinusoidal", &sinus};
  std::vector<Series> spectra = {s_first};
  if (points.size() > 2) spectra.push_back(s_mid);
  if (points.size() > 1) spectra.push_back(s_last);
  spectra.push_back(s_random);
  spectra.push_back(s_sin);
  std::vector<Series> ends = {s_first};
  if (points.size() > 1) ends.push_back(s_last);

  const std::vector<MetricsRecord> metrics =
      fs::is_regular_file(run.metrics(), ec) ? read_metrics(run.metrics()) : std::vector<MetricsRecord>{};
  std::vector<Figure> figures = {spectrum_figure(spectra, &s_last),
                                 cumulative_variance_figure(spectra),
                                 similarity_heatmaps_figure(ends),
                                 cos_by_offset_figure(points),
                                 principal_components_figure(s_last),
                                 helix_figure(s_last),
                                 row_norms_figure(ends),
                                 trajectory_figure(points, metrics)};
  if (points.size() > 3)  // which of the snapshots the spectra are, where there are more than the ones drawn
    for (size_t k : {0, 1})
      figures[k].caption +=
          fmt::format(" Of the run's {} snapshots, the first, the middle and the last are drawn.", points.size());
  std::vector<std::pair<int64_t, const Analysis*>> periodograms;
  for (const auto& p : points) periodograms.emplace_back(p.step, &p.analysis);
  figures.insert(figures.begin() + 4, periodogram_figure(periodograms));
  if (std::optional<Figure> circle = circle_plane_figure(s_last))  // after the helix
    figures.insert(figures.begin() + 7, std::move(*circle));
  const std::vector<double> position_loss = read_position_loss(run.position_loss());
  if (!position_loss.empty()) figures.push_back(position_loss_figure(position_loss, "val"));
  const ShiftCurve shift = read_shift_loss(run.shift_loss());
  if (!shift.shifts.empty()) figures.push_back(shift_loss_figure(shift, "val"));

  std::vector<std::pair<std::string, torch::Tensor>> probed = {
      {label(points.front()), read_npy_table(run.snapshot_file(points.front().file))}};
  if (points.size() > 1)
    probed.emplace_back(label(points.back()), read_npy_table(run.snapshot_file(points.back().file)));
  const std::string probes = probes_table(probed, opt.shuffle_seed);
  const UsageSection usage = usage_section(run_dir, points);
  figures.insert(figures.end(), usage.figures.begin(), usage.figures.end());
  const ExtensionSection extension = extension_section(run_dir);
  figures.insert(figures.end(), extension.figures.begin(), extension.figures.end());

  const std::string dir = run.report_dir();
  ReportResult result;
  result.figures = draw_figures(dir, figures);

  result.watch_html = write_watch_page(run_dir, dir, points);
  const std::string top =
      fmt::format("<p class=\"verdict{}\"><b>Verdict: {}.</b> {}</p>\n",
                  verdict.outcome == Outcome::emerged              ? ""
                  : verdict.outcome == Outcome::present_from_start ? " present"
                                                                   : " no",
                  outcome_name(verdict.outcome), html_escape(verdict.summary)) +
      (verdict.outcome == Outcome::emerged ? half_change_line(points) : std::string()) +
      fmt::format(
          "<p class=\"watch\"><a href=\"watch.html\">&#9654; Watch the table form</a>: the rows' similarity, "
          "their path on the helix or circle the analysis found (else the principal axes), the spectrum and layer 0's "
          "kernels at each of the {} snapshots, "
          "with a step slider.</p>\n",
          points.size()) +
      "<h2>Key metrics</h2>\n" +
      metrics_table({s_first, s_last, s_random, s_sin, Series{"handbook", &handbook}, Series{"walk", &walk}}) +
      fmt::format("<p>{} snapshots from step {} to {}. {} {} Definitions of every metric: docs/analysis.md.</p>\n",
                  points.size(), points.front().step, points.back().step, kControlsNote, kControlsDrawNote) +
      fmt::format("{}{} -->\n", kLastSnapshotMark, points.back().step) +
      "<details><summary>Run config</summary>\n<pre>" + html_escape(config_text) + "</pre>\n</details>\n" + probes +
      usage.html + extension.html + "<h2>Figures</h2>\n";
  result.index_html = (fs::path(dir) / "index.html").string();
  write_file_atomic(result.index_html,
                    report_page("poslab report: " + run.name(), RunFolder(run_dir).path(), top, figures));
  return result;
}

bool run_report_is_current(const std::string& run_dir) {
  const RunFolder run(run_dir);
  const fs::path index = fs::path(run.report_dir()) / "index.html";
  std::error_code ec;
  if (!fs::is_regular_file(index, ec)) return false;
  try {
    const std::vector<SnapshotRecord> snapshots = read_snapshot_index(run);
    if (snapshots.empty()) return true;  // nothing a report could show
    const std::string page = read_file(index.string());
    const size_t at = page.find(kLastSnapshotMark);
    return at != std::string::npos &&
           std::strtoll(page.c_str() + at + std::strlen(kLastSnapshotMark), nullptr, 10) == snapshots.back().step;
  } catch (const Error&) {  // a damaged index: drawn again, where write_report_of_finished_run says what is wrong
    return false;
  }
}

std::string write_report_of_finished_run(const std::string& run_dir) {
  // what a Ctrl-C now stops: the report, which the resume of the finished run writes
  set_stop_message("\nstopping the report (poslab train --resume writes it); signal again to exit at once\n");
  struct Restore {
    ~Restore() { set_stop_message(nullptr); }
  } restore;
  try {
    const std::string page = write_run_report(run_dir).index_html;
    spdlog::info("report: {}", page);
    return page;
  } catch (const Error& e) {
    // A full or read-only disk stops the run (its training is done): the next write would fail too.
    if (!disk_fault(run_dir).empty())
      throw Error(e.what(), "free some space (or make the folder writable), then poslab train --resume " + run_dir +
                                " writes the report: the training is done and its checkpoint intact");
    if (stop_requested()) {  // Ctrl-C: gnuplot, in the terminal's process group, stopped too
      spdlog::warn("report not written: interrupted");
      return "";
    }
    spdlog::error("report not written: {}{}", e.what(), e.hint().empty() ? "" : " (" + e.hint() + ")");
    return "";
  }
}

ReportResult write_table_report(const torch::Tensor& W, const std::string& source, const std::string& out_dir,
                                int64_t row_offset, int64_t grid_rows, int64_t grid_cols) {
  AnalysisOptions opt;
  opt.keep_cosine_matrix = true;
  opt.row_offset = row_offset;
  const Analysis a = analyze_table(W, source, opt);
  const std::vector<Baseline> baselines = baseline_analyses(a.positions, a.dims, opt);
  const Analysis& random = baselines[0].analysis;
  const Analysis& sinus = baselines[1].analysis;
  const Analysis& handbook = baselines[2].analysis;
  const Analysis& walk = baselines[3].analysis;
  // The pages name the rows they show of a sliced table, as analyze does: "FILE (rows 1:64)".
  const std::string shown =
      row_offset ? fmt::format("{} (rows {}:{})", source, row_offset, row_offset + a.positions) : source;
  const Series s{"table", &a}, r{"random", &random}, sn{"sinusoidal", &sinus};
  std::vector<Figure> figures = {spectrum_figure({s, r, sn}, &s),
                                 cumulative_variance_figure({s, r, sn}),
                                 similarity_heatmaps_figure({s}),
                                 periodogram_figure({{0, &a}}),
                                 principal_components_figure(s),
                                 helix_figure(s),
                                 row_norms_figure({s})};
  if (std::optional<Figure> circle = circle_plane_figure(s))  // after the helix
    figures.insert(figures.begin() + 6, std::move(*circle));
  std::string grid_html;
  if (grid_rows > 0) {
    const GridAnalysis g = grid_analysis(W, grid_rows, grid_cols, opt.shuffle_seed);
    figures.push_back(grid_offset_figure(g));
    figures.push_back(patch_maps_figure(g));
    grid_html = fmt::format(
        "<h2>The patch grid</h2>\n<p>{} × {} patches. The rows split into a part that depends on the grid row ({:.1f} "
        "% of "
        "the variance), a part that depends on the column ({:.1f} %) and the rest ({:.1f} %); with the patches "
        "shuffled: "
        "{:.1f} % and {:.1f} %. Cosine of neighbours: same row {:.3f}, same column {:.3f}; any two patches {:.3f} "
        "(docs/models.md, \"2-D position grids\").</p>\n",
        g.rows, g.cols, 100 * g.row_share, 100 * g.col_share, 100 * g.interaction_share, 100 * g.shuffled_row_share,
        100 * g.shuffled_col_share, g.horizontal_cosine, g.vertical_cosine, g.mean_cosine);
  }
  ReportResult result;
  result.figures = draw_figures(out_dir, figures);
  write_table_watch_page(W, a, shown, out_dir);
  const std::string top =
      "<p class=\"watch\"><a href=\"watch.html\">&#9654; Explore the table</a>: the rows' "
      "similarity with hover, their path on the table's helix or circle (else the principal axes) in 2-D and 3-D (drag "
      "to rotate), the "
      "spectrum with the noise floor and the power along position.</p>\n"
      "<h2>Key metrics</h2>\n" +
      metrics_table({s, r, sn, Series{"handbook", &handbook}, Series{"walk", &walk}}) +
      fmt::format("<p>{} positions × {} dims. {} {} Definitions of every metric: docs/analysis.md.</p>\n", a.positions,
                  a.dims, kControlsNote, kControlsDrawNote) +
      probes_table({{"table", W}}, opt.shuffle_seed) + grid_html + "<h2>Figures</h2>\n";
  result.index_html = (fs::path(out_dir) / "index.html").string();
  write_file_atomic(result.index_html, report_page("poslab report: one position table", shown, top, figures));
  return result;
}

}  // namespace poslab
