// poslab report: one self-contained HTML page with gnuplot figures of a run's (or one table's) analysis.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "analysis/trajectory.h"
#include "report/html.h"

namespace poslab {

struct ReportResult {
  std::string index_html;            // path of the page
  std::string watch_html;            // the run's "watch it form" page (run reports only)
  std::vector<std::string> figures;  // stems: each has .dat files, .gp, .png and .svg in the report folder
};

// Writes RUN_DIR/report/: data files, gnuplot scripts, figures (PNG and SVG) and index.html.
// Data and scripts are written first; without gnuplot this throws poslab::Error after writing them.
ReportResult write_run_report(const std::string& run_dir, const VerdictThresholds& thresholds = {});

// Whether RUN_DIR/report/index.html shows the run as it is: the page is there and was drawn from the run's last
// snapshot (a run extended after its report, stopped before the new one, still shows the old).
bool run_report_is_current(const std::string& run_dir);

// The report at the end of a training run (TrainSummary::report_due): write_run_report with a log line naming the
// page, or an error line (a run's report failing does not fail the run, unless its disk is full or read-only: then
// poslab::Error, naming the file and the cause). Returns the page's path, or "".
std::string write_report_of_finished_run(const std::string& run_dir);

// The figures that make sense for one table (spectrum, variance, heatmap, PCs, helix, row norms), in out_dir.
// Both reports compare with analysis/baselines.h's controls (the same seed and scale as poslab analyze).
// A vision table's rows are a grid_rows x grid_cols grid of patches (0: a sequence): its 2-D figures are added.
ReportResult write_table_report(const torch::Tensor& W, const std::string& source, const std::string& out_dir,
                                int64_t row_offset = 0, int64_t grid_rows = 0, int64_t grid_cols = 0);

// A folder a report or comparison is written into (`named`: "--out", "the report folder"; `kind`: "report" or
// "compare", the command writing it): one that does not exist, is empty, or holds poslab's own earlier page of the
// same kind (its index.html says poslab made it, and which command) is written into; any other folder, one with the
// other command's page among them, only with `force` (the page replaces files by name), and a file not at all.
// poslab::Error names it.
void check_report_folder(const std::string& dir, const std::string& named, bool force,
                         const std::string& kind = "report");

// The pieces both reports and poslab compare are made of. Writes each figure's data and script into `dir`, then
// renders them with gnuplot (poslab::Error naming the script when it fails); returns the figures' names.
struct Figure;
std::vector<std::string> draw_figures(const std::string& dir, const std::vector<Figure>& figures);
// A whole page: title, source line, `top` (HTML), then each figure (PNG, links to its SVG and script).
std::string report_page(const std::string& title, const std::string& source, const std::string& top,
                        const std::vector<Figure>& figures);

}  // namespace poslab
