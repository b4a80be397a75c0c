// poslab compare: runs grouped by variant (a sweep's VARIANT folder, or each run alone), seeds pooled as
// mean ± standard deviation, as a table (CSV, JSON) and one HTML page with gnuplot figures.
// compare.cpp reads and pools the runs; compare_page.cpp writes the page (its fixed HTML: compare_page.html).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "analysis/trajectory.h"

namespace poslab {

// One run's final numbers. Runs without a learned table (model.position none or sinusoidal) have losses only.
struct ComparedRun {
  std::string run_dir;
  std::string variant;  // the sweep variant, or the run's folder name
  int64_t seed = 0;
  std::string position;  // model.position
  int64_t step = 0;      // last step with a val loss
  double train_loss = NAN, val_loss = NAN;
  std::vector<TrajectoryPoint> points;  // the table's snapshots, analysed (empty without a learned table)
  std::optional<Verdict> verdict;
};

// mean ± sample standard deviation (n − 1) over the seeds; sd is NaN for one seed, both NaN for none.
struct Stat {
  double mean = NAN, sd = NAN;
  int n = 0;
};
Stat pooled(const std::vector<double>& values);  // NaN values are left out

// A variant's curves (the (x, y) points of each of its seeds) as the compare page's figures draw them: at each x the
// mean and a band of ± one sd, kept within the seeds' own lowest and highest value there (a count of 0 and 2 circles
// gives 1 ± 1.4, and the band stops at 0 and 2, where the seeds do: with two seeds the band is always their range);
// one seed's value is its band.
using SeedCurve = std::vector<std::pair<double, double>>;
struct SeedBand {
  std::vector<double> x, mean, lo, hi;
};
SeedBand seed_band(const std::vector<SeedCurve>& curves);

struct VariantRow {
  std::string variant;
  std::vector<size_t> runs;            // indices into Comparison::runs
  std::vector<std::string> keys;       // column keys: "val_loss", "train_loss", then the table metrics
  std::vector<Stat> stats;             // one per key
  int emerged = 0, judged = 0;         // runs whose structure emerged, runs with a table
  int present = 0;                     // runs whose structure was present from the start (a fixed or extended table)
  Stat emerged_from;                   // over the runs where it emerged
  std::vector<std::string> half_keys;  // the headline metrics
  std::vector<Stat> half_change;       // per headline metric: its half-change step over the judged runs
  int boundary_outliers = 0;           // summed over the runs' last snapshots
  Stat boundary_outliers_per_run;      // each judged run's count at its last snapshot
  std::vector<std::string> form_keys;  // the table's form at the last snapshot: form_metric_keys()
  std::vector<Stat> form;              // one per form key, over the judged runs
  int pc1_ramps = 0;                   // judged runs whose PC1 peaks at the period search's end (a ramp, a half wave):
  double pc1_bound = NAN;              //   its period there is a lower bound, 2P (the largest of those runs')
  Stat pc1_period_below;               // PC1's period over the other runs
  int circled = 0;                     // judged runs whose last table holds at least one circle
  Stat circle_from;                    // over those runs: the step from which every snapshot holds one
};

// The keys of the table's form that compare pools beside the headline metrics: circle_count, circle_period,
// circle_share, helix_share, top_component_share, pc1_period, sinusoid_r2_strongest (analysis/metric_list.h). A
// table without a circle or helix counts a share of 0; circle_period pools the runs that have one.
const std::vector<std::string>& form_metric_keys();

// How alike two variants' final tables are up to rotation and scale (analysis/agreement.h), over every pair of
// runs with tables of the same shape: within a variant the pairs of its seeds (a == b), between two variants every
// cross pair. mean_cos2 pools the pairs where both tables have a component above the noise floor.
struct AgreementCell {
  std::string a, b;  // variants
  int pairs = 0;
  Stat cka, procrustes_residual, similarity_correlation, mean_cos2;
  double cka_random = NAN;  // what independent random tables of the shape give
};

struct Comparison {
  std::vector<ComparedRun> runs;
  std::vector<VariantRow> rows;          // in the order variants first appear
  std::vector<AgreementCell> agreement;  // within each variant first, then between variants, in row order
  std::vector<std::string> left_out;     // the runs not compared, each "RUN_DIR (at step S of N)" or "(not started)"
};

// Reads each folder: a run folder (config.yaml + metrics.jsonl), or a sweep folder (sweep.json: its runs in the
// sweep's order; unfinished or missing runs are listed with a warning and left out). Throws poslab::Error naming
// a folder that is neither.
Comparison compare_runs(const std::vector<std::string>& dirs);

// The table: one line per variant; columns "variant,runs,<key>_mean,<key>_sd,...,emerged,judged,emerged_from_mean,
// emerged_from_sd,boundary_outliers,present,<metric>_half_step_mean,<metric>_half_step_sd,...,circled,
// circle_from_mean,circle_from_sd,<form key>_mean,<form key>_sd,...".
std::string comparison_csv(const Comparison& c);
// A comparison column's short name ("val loss", a metric's column) and its full name, for a key of Comparison::keys.
std::pair<std::string, std::string> comparison_column_names(const std::string& key);
nlohmann::json comparison_json(const Comparison& c);

// Writes OUT/index.html with the table and figures (trajectories with a band over seeds, losses, cosine by
// offset and spectra at the last snapshot), the seed agreement, comparison.csv and comparison.json (with the
// agreement), and for each variant with snapshots OUT/seeds_K_VARIANT.html, its seeds side by side on one step
// slider (report/watch_page.h); returns the page's path.
// Without gnuplot, throws poslab::Error after writing the data, scripts and tables.
std::string write_comparison(const Comparison& c, const std::string& out_dir);

}  // namespace poslab
