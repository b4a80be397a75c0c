#include "analysis/trajectory.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>

#include "analysis/metric_list.h"
#include "analysis/table_io.h"
#include "run/run_files.h"
#include "util/error.h"
#include "util/json_text.h"
#include "util/wrap.h"

namespace poslab {

std::vector<TrajectoryPoint> analyze_run(const std::string& run_dir, const AnalysisOptions& opt) {
  std::vector<TrajectoryPoint> points;
  for (const SnapshotRecord& r : read_snapshot_index(RunFolder(run_dir))) {
    TrajectoryPoint p;
    p.step = r.step;
    p.file = r.file;
    p.train_loss = r.train_loss;
    p.val_loss = r.val_loss;
    const torch::Tensor W = read_npy_table(r.path);
    // One run's snapshots are one table: another shape is a file put there by hand (or another run's).
    if (!points.empty() &&
        (W.size(0) != points.front().analysis.positions || W.size(1) != points.front().analysis.dims))
      throw Error(
          fmt::format("{}: a {} x {} table where the run's first snapshot ({}) is {} x {}", r.path, W.size(0),
                      W.size(1), points.front().file, points.front().analysis.positions, points.front().analysis.dims),
          "a run folder's snapshots are one position table over training: restore this file, or analyse it "
          "on its own with poslab analyze " +
              r.path);
    p.analysis = analyze_table(W, r.path, opt);
    points.push_back(std::move(p));
  }
  if (points.empty())
    throw Error(run_dir + ": the snapshot index is empty", "train for at least one step, then analyse the folder");
  return points;
}

std::string snapshot_span(const std::vector<TrajectoryPoint>& points) {
  if (points.size() == 1) return fmt::format("1 snapshot, step {}", points.front().step);
  return fmt::format("{} snapshots, steps {}..{}", points.size(), points.empty() ? 0 : points.front().step,
                     points.empty() ? 0 : points.back().step);
}

const TrajectoryPoint& middle_snapshot(const std::vector<TrajectoryPoint>& points) {
  const int64_t twice_middle = points.front().step + points.back().step;  // 2× the middle step: no rounding
  const auto off = [&](const TrajectoryPoint& p) { return std::abs(2 * p.step - twice_middle); };
  return *std::min_element(points.begin(), points.end(),
                           [&](const TrajectoryPoint& a, const TrajectoryPoint& b) { return off(a) < off(b); });
}

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::emerged:
      return "emerged";
    case Outcome::present_from_start:
      return "present from the start";
    case Outcome::not_formed:
      return "not formed";
  }
  return "?";
}

namespace {

std::string signal_words(const Analysis& a) {
  if (a.noise.signal_rank == 0) return "no component above the noise floor";
  return fmt::format("{} component{} above the noise floor hold{} {:.0f} % of the variance", a.noise.signal_rank,
                     a.noise.signal_rank == 1 ? "" : "s", a.noise.signal_rank == 1 ? "s" : "",
                     100 * a.noise.signal_share);
}

std::string order_words(const Analysis& a) {
  return fmt::format("adjacent cosine {:.3f} against {:.3f} ± {:.3f} for {} shuffled copies (z = {:.1f})",
                     a.smooth.adjacent_cosine, a.shuffle_control.mean, a.shuffle_control.sd, a.shuffle_control.copies,
                     a.shuffle_control.z);
}

const Analysis* at_step(const std::vector<TrajectoryPoint>& points, int64_t step) {
  for (const auto& p : points)
    if (p.step == step) return &p.analysis;
  return nullptr;
}

// ", a helix …" after the verdict's circle: the slow component, or the three components the helix was turned apart in.
std::string helix_words(const std::optional<Helix>& h) {
  if (!h) return "";
  if (h->rotated) {
    const std::array<int, 3> within = helix_space(*h);
    return fmt::format(", a helix turned apart within components {}, {} and {} (together {:.1f} %)", within[0],
                       within[1], within[2], 100 * h->explained);
  }
  // the helix's share is the circle's and its slow axis's together: most of it is often the slow axis alone
  return fmt::format(", a helix with component {} ({:.1f} % with the circle)", h->slow, 100 * h->explained);
}

}  // namespace

Verdict judge(const std::vector<TrajectoryPoint>& points, const VerdictThresholds& t) {
  Verdict v;
  v.thresholds = t;
  if (points.empty()) return v;
  auto low_rank = [&](const Analysis& a) {
    return a.noise.signal_rank >= 1 && a.noise.signal_share >= t.min_signal_share;
  };
  auto smooth = [&](const Analysis& a) { return a.shuffle_control.z >= t.smooth_z; };
  auto present = [&](const Analysis& a) { return low_rank(a) && smooth(a); };
  // From the end backwards: the earliest step from which a criterion holds at every later snapshot.
  auto stable_from = [&](auto criterion) -> std::optional<int64_t> {
    std::optional<int64_t> from;
    for (auto it = points.rbegin(); it != points.rend() && criterion(it->analysis); ++it) from = it->step;
    return from;
  };
  v.low_rank_from = stable_from(low_rank);
  v.smooth_from = stable_from(smooth);
  v.present_from = stable_from(present);
  v.circle_from = stable_from([](const Analysis& a) { return !a.circles.empty(); });
  v.low_rank = v.low_rank_from.has_value();
  v.smooth = v.smooth_from.has_value();
  const TrajectoryPoint& first = points.front();
  const TrajectoryPoint& last = points.back();
  v.present_at_start = present(first.analysis);
  if (v.present_from && !v.present_at_start) {
    v.outcome = Outcome::emerged;
    v.emerged = true;
    v.emerged_from = v.present_from;
  } else if (v.present_from) {
    v.outcome = Outcome::present_from_start;
  }

  const Analysis& a0 = first.analysis;
  const Analysis& aL = last.analysis;
  switch (v.outcome) {
    case Outcome::emerged: {
      const Analysis& aS = *at_step(points, *v.emerged_from);
      v.summary = fmt::format(
          "Smooth, low-rank structure emerged from step {}: there {} (step {}: {}); {}. At step {}: {}; {}.",
          *v.emerged_from, signal_words(aS), first.step, a0.noise.signal_rank == 0 ? "none" : signal_words(a0),
          order_words(aS), last.step, signal_words(aL), order_words(aL));
      break;
    }
    case Outcome::present_from_start:
      v.summary = fmt::format(
          "Smooth, low-rank structure present from the start{}: at step {}, {}; {}. At step {}: {}; {}.",
          *v.present_from == first.step ? std::string() : fmt::format(" (and stably from step {})", *v.present_from),
          first.step, signal_words(a0), order_words(a0), last.step, signal_words(aL), order_words(aL));
      break;
    case Outcome::not_formed: {
      auto from = [](const std::optional<int64_t>& s) {
        return s ? fmt::format("from step {}", *s) : std::string("no");
      };
      // each bound written as one word ("≥50%", "z≥5.0"), so that wrapping never splits it
      v.summary = fmt::format(
          "No stable smooth, low-rank structure{}: at step {}, {}; {}. Low rank (components above the "
          "noise floor hold ≥{:.0f}% of the variance): {}; smooth (z≥{:.1f}): {}.",
          v.present_at_start ? " (it was present at the first snapshot and was lost)" : "", last.step, signal_words(aL),
          order_words(aL), 100 * t.min_signal_share, from(v.low_rank_from), t.smooth_z, from(v.smooth_from));
      break;
    }
  }
  if (v.circle_from) {
    const Circle& c = last.analysis.circles.front();
    v.summary += fmt::format(
        " A circle from step {}: at step {}, components {} and {} turn in quadrature with a period of {:.1f} "
        "positions ({:.1f} % of the variance){}.",
        *v.circle_from, last.step, c.first, c.second, c.period, 100 * c.explained, helix_words(last.analysis.helix));
  }
  return v;
}

std::vector<HalfChange> half_change_steps(const std::vector<TrajectoryPoint>& points) {
  std::vector<HalfChange> out;
  for (const Metric& m : headline_metrics()) {
    HalfChange h{m.key, std::nullopt};
    if (!points.empty()) {
      const double v0 = m.value(points.front().analysis), vL = m.value(points.back().analysis);
      const double change = vL - v0;
      if (std::isfinite(change) && std::abs(change) > 1e-12 * std::max(1.0, std::abs(v0)))
        for (const auto& p : points) {
          const double moved = (m.value(p.analysis) - v0) / change;
          if (std::isfinite(moved) && moved >= 0.5) {
            h.step = p.step;
            break;
          }
        }
    }
    out.push_back(h);
  }
  return out;
}

std::string trajectory_tables(const std::vector<TrajectoryPoint>& points, std::optional<int64_t> emerged_from,
                              size_t width) {
  constexpr size_t kMaxRows = 21;
  std::vector<size_t> rows;
  if (points.size() <= kMaxRows) {
    for (size_t i = 0; i < points.size(); ++i) rows.push_back(i);
  } else {
    for (size_t r = 0; r < kMaxRows; ++r)
      rows.push_back((r * (points.size() - 1) + (kMaxRows - 1) / 2) / (kMaxRows - 1));
    for (size_t i = 0; emerged_from && i < points.size(); ++i)
      if (points[i].step == *emerged_from) rows.push_back(i);
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  }
  struct Column {
    std::string header, group;
    std::vector<std::string> values;  // by point
    std::string half = "-";           // its half-change step; "" for the val loss, which has none
  };
  std::vector<Column> columns;
  {
    Column loss{"val loss", "spectrum", {}, ""};
    for (const auto& p : points)
      loss.values.push_back(std::isfinite(p.val_loss) ? fmt::format("{:.4f}", p.val_loss) : "");
    columns.push_back(loss);
  }
  const std::vector<HalfChange> half = half_change_steps(points);
  const std::vector<Metric> metrics = headline_metrics();
  for (size_t k = 0; k < metrics.size(); ++k) {
    Column c{metrics[k].column, metrics[k].group, {}, "-"};
    for (const auto& p : points) c.values.push_back(format_metric(metrics[k], p.analysis));
    if (k < half.size() && half[k].step) c.half = std::to_string(*half[k].step);
    columns.push_back(c);
  }
  const std::map<std::string, std::string> titles = {{"spectrum", "the spectrum, and the val loss"},
                                                     {"order", "order along position, against row-shuffled copies"},
                                                     {"form", "form: sinusoids, interpolation, a position probe"}};
  const size_t per_table = std::max<size_t>(1, (std::max<size_t>(width, 18) - 8) / 10);
  std::string s;
  for (size_t begin = 0; begin < columns.size();) {
    size_t end = begin + 1;
    while (end < columns.size() && end - begin < per_table && columns[end].group == columns[begin].group) ++end;
    const auto title = titles.find(columns[begin].group);
    s += "\n" + wrap_text(title == titles.end() ? columns[begin].group : title->second, width) + "\n";
    s += fmt::format("{:>8}", "step");
    for (size_t c = begin; c < end; ++c) s += fmt::format(" {:>9}", columns[c].header);
    s += "\n";
    for (size_t r : rows) {
      s += fmt::format("{:>8}", points[r].step);
      for (size_t c = begin; c < end; ++c) s += fmt::format(" {:>9}", columns[c].values[r]);
      s += "\n";
    }
    s += fmt::format("{:>8}", "half-way");
    for (size_t c = begin; c < end; ++c) s += fmt::format(" {:>9}", columns[c].half);
    while (s.back() == ' ') s.pop_back();
    s += "\n";
    begin = end;
  }
  const std::string note =
      "half-way: the first snapshot by which the metric had moved half of its change from the first snapshot to "
      "the last.";
  s += "\n" + wrap_text(note, width);
  if (rows.size() < points.size())
    s += "\n" + wrap_text(fmt::format("{} of the {} snapshots shown; every one is in trajectory.csv.", rows.size(),
                                      points.size()),
                          width);
  return s + "\n";
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

nlohmann::json verdict_json(const Verdict& v, const std::vector<TrajectoryPoint>& points) {
  auto opt = [](const std::optional<int64_t>& s) { return s ? nlohmann::json(*s) : nlohmann::json(nullptr); };
  nlohmann::json j = {
      {"outcome", outcome_name(v.outcome)},
      {"emerged", v.emerged},
      {"emerged_from", opt(v.emerged_from)},
      {"present_at_start", v.present_at_start},
      {"present_from", opt(v.present_from)},
      {"low_rank", v.low_rank},
      {"low_rank_from", opt(v.low_rank_from)},
      {"smooth", v.smooth},
      {"smooth_from", opt(v.smooth_from)},
      {"circle_from", opt(v.circle_from)},
      {"thresholds", {{"min_signal_share", v.thresholds.min_signal_share}, {"smooth_z", v.thresholds.smooth_z}}},
      {"summary", v.summary}};
  if (!points.empty()) {
    nlohmann::json h = nlohmann::json::object();
    for (const HalfChange& c : half_change_steps(points)) h[c.key] = opt(c.step);
    j["half_change_step"] = h;
  }
  return j;
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
      if (r.contains(cols[i]) && !r[cols[i]].is_null()) csv += json_text(r[cols[i]]);
    }
    csv += "\n";
  }
  return csv;
}

}  // namespace poslab
