// A run folder's snapshots analysed over steps, and the verdict: did smooth, low-rank structure emerge?
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace poslab {

// The verdict reads each snapshot against the noise and the shuffled controls (docs/analysis.md, "Trajectory and
// verdict"):
//   present:  low rank  — the components above the noise floor (Gavish–Donoho) hold >= min_signal_share of the
//                         centred variance, and there is at least one;
//             smooth    — the adjacent cosine is >= smooth_z standard deviations above the mean of the row-shuffled
//                         copies' adjacent cosines.
// "from step S": present at S and at every later snapshot. Three outcomes:
//   emerged              — absent at the first snapshot, present from some later step S to the end;
//   present from start   — present at the first snapshot and at the end (a fixed or extended table, --init-from);
//   not formed           — not present from any step to the end.
struct VerdictThresholds {
  double min_signal_share = 0.5;
  double smooth_z = 5.0;
};

struct TrajectoryPoint {
  int64_t step = 0;
  std::string file;
  double train_loss = NAN, val_loss = NAN;
  Analysis analysis;
};

enum class Outcome { emerged, present_from_start, not_formed };
const char* outcome_name(Outcome o);  // "emerged", "present from the start", "not formed"

// "4 snapshots, steps 0..300", or "1 snapshot, step 0".
std::string snapshot_span(const std::vector<TrajectoryPoint>& points);

// The snapshot whose step is nearest the middle of the first's and the last's (the earlier of two as near): the same
// one whether or not a stop added a snapshot between the regular ones. `points` is not empty, in step order.
const TrajectoryPoint& middle_snapshot(const std::vector<TrajectoryPoint>& points);

struct Verdict {
  Outcome outcome = Outcome::not_formed;
  bool low_rank = false, smooth = false, emerged = false;  // stably to the last snapshot (emerged: outcome == emerged)
  bool present_at_start = false;                           // low rank and smooth at the first snapshot
  std::optional<int64_t> low_rank_from, smooth_from, present_from, emerged_from;
  std::optional<int64_t> circle_from;  // the table holds a circle (analysis/periodicity.h) from this step to the end
  VerdictThresholds thresholds;
  std::string summary;  // one or two sentences with the numbers that carry the outcome
};

// Per headline metric (analysis/metric_list.h), the first snapshot step where the metric has moved half of its
// total change from the first snapshot to the last (nullopt when it did not change or is not finite).
struct HalfChange {
  std::string key;
  std::optional<int64_t> step;
};
std::vector<HalfChange> half_change_steps(const std::vector<TrajectoryPoint>& points);

// For a terminal `width` columns wide (80: the step's column of 8 and 7 of 10): the val loss and the headline metrics
// by snapshot, one table per metric group (the spectrum with the val loss, order, form), each under a title and
// ending in a "half-way" row of the metrics' half-change steps. At most 21 snapshots, evenly spaced, with the first,
// the last and `emerged_from` among them (trajectory.csv has every one: a line says so).
std::string trajectory_tables(const std::vector<TrajectoryPoint>& points, std::optional<int64_t> emerged_from,
                              size_t width);

// Reads RUN_DIR/snapshots/index.jsonl and analyses every snapshot (in step order).
// Throws poslab::Error naming the folder when it has no snapshots.
std::vector<TrajectoryPoint> analyze_run(const std::string& run_dir, const AnalysisOptions& opt = {});

Verdict judge(const std::vector<TrajectoryPoint>& points, const VerdictThresholds& t = {});

nlohmann::json trajectory_json(const std::vector<TrajectoryPoint>& points);
// The verdict's fields, its thresholds and, with `points`, the half-change step of each headline metric.
nlohmann::json verdict_json(const Verdict& v, const std::vector<TrajectoryPoint>& points = {});
std::string trajectory_csv(const std::vector<TrajectoryPoint>& points);

}  // namespace poslab
