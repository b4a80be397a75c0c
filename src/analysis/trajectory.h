// A run folder's snapshots analysed over steps, and the verdict: did smooth, low-rank structure emerge?
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace poslab {

// Structure "has emerged" at a snapshot when, against the step-0 table and the row-shuffled control:
//   low rank:  k90 <= rank_ratio * k90(step 0)  and  effective rank <= rank_ratio * effective rank(step 0)
//   smooth:    adjacent cosine >= shuffled copy's adjacent cosine + smooth_margin
// and "from step S" means it holds at S and at every later snapshot.
struct VerdictThresholds {
  double rank_ratio = 0.5;
  double smooth_margin = 0.3;
};

struct TrajectoryPoint {
  int64_t step = 0;
  std::string file;
  double train_loss = NAN, val_loss = NAN;
  Analysis analysis;
};

struct Verdict {
  bool low_rank = false, smooth = false, emerged = false;  // at the last snapshot, and stably
  std::optional<int64_t> low_rank_from, smooth_from, emerged_from;
  VerdictThresholds thresholds;
  std::string summary;  // one or two sentences with the numbers
};

// Reads RUN_DIR/snapshots/index.jsonl and analyses every snapshot (in step order).
// Throws poslab::Error naming the folder when it has no snapshots.
std::vector<TrajectoryPoint> analyze_run(const std::string& run_dir, const AnalysisOptions& opt = {});

Verdict judge(const std::vector<TrajectoryPoint>& points, const VerdictThresholds& t = {});

nlohmann::json trajectory_json(const std::vector<TrajectoryPoint>& points);
nlohmann::json verdict_json(const Verdict& v);
std::string trajectory_csv(const std::vector<TrajectoryPoint>& points);

}  // namespace poslab
