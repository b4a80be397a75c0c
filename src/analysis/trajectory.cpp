#include "analysis/trajectory.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "analysis/metric_list.h"
#include "analysis/table_io.h"
#include "util/error.h"

namespace poslab {
namespace fs = std::filesystem;

std::vector<TrajectoryPoint> analyze_run(const std::string& run_dir, const AnalysisOptions& opt) {
  const fs::path index = fs::path(run_dir) / "snapshots" / "index.jsonl";
  std::error_code ec;
  if (!fs::is_regular_file(index, ec))
    throw Error(run_dir + ": no snapshots (" + index.string() + " is missing)",
                "pass a run folder written by poslab train with model.position learned or sinusoidal");
  std::vector<TrajectoryPoint> points;
  std::ifstream in(index);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("step") || !j.contains("file")) {
      if (in.peek() == EOF) break;  // a last line cut short by a crash
      throw Error(index.string() + ":" + std::to_string(line_no) + ": not a snapshot record",
                  "each line must be JSON with step and file");
    }
    TrajectoryPoint p;
    p.step = j["step"].get<int64_t>();
    p.file = j["file"].get<std::string>();
    if (j.contains("train_loss")) p.train_loss = j["train_loss"].get<double>();
    if (j.contains("val_loss")) p.val_loss = j["val_loss"].get<double>();
    const std::string path = (fs::path(run_dir) / "snapshots" / p.file).string();
    p.analysis = analyze_table(read_npy_table(path), path, opt);
    points.push_back(std::move(p));
  }
  if (points.empty())
    throw Error(run_dir + ": the snapshot index is empty", "train for at least one step, then analyse the folder");
  std::stable_sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  return points;
}

Verdict judge(const std::vector<TrajectoryPoint>& points, const VerdictThresholds& t) {
  Verdict v;
  v.thresholds = t;
  if (points.empty()) return v;
  const Analysis& init = points.front().analysis;
  auto low_rank = [&](const Analysis& a) {
    return a.k90 <= t.rank_ratio * init.k90 && a.effective_rank <= t.rank_ratio * init.effective_rank;
  };
  auto smooth = [&](const Analysis& a) { return a.smooth.adjacent_cosine >= a.shuffled.adjacent_cosine + t.smooth_margin; };
  // From the end backwards: the earliest step from which a criterion holds at every later snapshot.
  auto stable_from = [&](auto criterion) -> std::optional<int64_t> {
    std::optional<int64_t> from;
    for (auto it = points.rbegin(); it != points.rend() && criterion(it->analysis); ++it) from = it->step;
    return from;
  };
  v.low_rank_from = stable_from(low_rank);
  v.smooth_from = stable_from(smooth);
  v.emerged_from = stable_from([&](const Analysis& a) { return low_rank(a) && smooth(a); });
  v.low_rank = v.low_rank_from.has_value();
  v.smooth = v.smooth_from.has_value();
  v.emerged = v.emerged_from.has_value();
  const Analysis& last = points.back().analysis;
  const std::string numbers = fmt::format(
      "k90 {} -> {}, effective rank {:.1f} -> {:.1f} (low rank needs <= {:.0f}% of step 0's); adjacent cosine {:.3f} -> {:.3f} "
      "against {:.3f} for the shuffled copy (smooth needs a margin of {:.2f})",
      init.k90, last.k90, init.effective_rank, last.effective_rank, 100 * t.rank_ratio, init.smooth.adjacent_cosine,
      last.smooth.adjacent_cosine, last.shuffled.adjacent_cosine, t.smooth_margin);
  auto from = [](const std::optional<int64_t>& s) { return s ? fmt::format("from step {}", *s) : std::string("no"); };
  if (v.emerged)
    v.summary = fmt::format("Smooth, low-rank structure emerged from step {}: {}.", *v.emerged_from, numbers);
  else
    v.summary = fmt::format("No stable smooth, low-rank structure yet (low rank: {}; smooth: {}): {}.", from(v.low_rank_from),
                            from(v.smooth_from), numbers);
  return v;
}

nlohmann::json trajectory_json(const std::vector<TrajectoryPoint>& points) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& p : points) {
    nlohmann::json j = {{"step", p.step}, {"file", p.file}};
    for (const Metric& m : scalar_metrics()) j[m.key] = metric_json(m, p.analysis);
    if (std::isfinite(p.train_loss)) j["train_loss"] = p.train_loss;
    if (std::isfinite(p.val_loss)) j["val_loss"] = p.val_loss;
    arr.push_back(j);
  }
  return arr;
}

nlohmann::json verdict_json(const Verdict& v) {
  auto opt = [](const std::optional<int64_t>& s) { return s ? nlohmann::json(*s) : nlohmann::json(nullptr); };
  return {{"emerged", v.emerged},          {"emerged_from", opt(v.emerged_from)},
          {"low_rank", v.low_rank},        {"low_rank_from", opt(v.low_rank_from)},
          {"smooth", v.smooth},            {"smooth_from", opt(v.smooth_from)},
          {"thresholds", {{"rank_ratio", v.thresholds.rank_ratio}, {"smooth_margin", v.thresholds.smooth_margin}}},
          {"summary", v.summary}};
}

std::string trajectory_csv(const std::vector<TrajectoryPoint>& points) {
  const nlohmann::json rows = trajectory_json(points);
  std::vector<std::string> cols = {"step", "train_loss", "val_loss"};
  for (const Metric& m : scalar_metrics()) cols.push_back(m.key);
  std::string csv;
  for (size_t i = 0; i < cols.size(); ++i) csv += (i ? "," : "") + cols[i];
  csv += "\n";
  for (const auto& r : rows) {
    for (size_t i = 0; i < cols.size(); ++i) {
      if (i) csv += ",";
      if (r.contains(cols[i]) && !r[cols[i]].is_null()) csv += r[cols[i]].dump();
    }
    csv += "\n";
  }
  return csv;
}

}  // namespace poslab
