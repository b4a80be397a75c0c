#include "report/watch.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <optional>

#include "analysis/analysis.h"
#include "analysis/attention_kernels.h"
#include "analysis/metric_list.h"
#include "analysis/periodicity.h"
#include "analysis/table_io.h"
#include "report/figures.h"
#include "report/html.h"
#include "report/watch_page.h"
#include "run/json_records.h"
#include "run/run_files.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/plural.h"

namespace poslab {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCurves[] = {"signal_share", "effective_rank", "adjacent_cosine",        "sinusoid_r2",
                                   "circle_count", "helix_share",    "translation_invariance", "monotonicity",
                                   "probe_r2"};

nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

std::string base64_of(const torch::Tensor& t) {
  const auto c = t.contiguous();
  return base64(static_cast<const uint8_t*>(c.data_ptr()), static_cast<size_t>(c.numel() * c.element_size()));
}

torch::Tensor index_tensor(const std::vector<int64_t>& rows) { return torch::tensor(rows, torch::kInt64); }

// Layer 0's kernels of one snapshot as (n_head, P, P), or undefined when the run did not write them or they do not
// fit the table.
torch::Tensor read_kernels(const RunFolder& run, int64_t step, int64_t n_head, int64_t P) {
  const std::string path = run.snapshot_kernels(step);
  if (n_head <= 0 || !fs::is_regular_file(path)) return {};
  const torch::Tensor flat = read_npy_table(path);  // (n_head·P, P)
  if (flat.size(0) != n_head * P || flat.size(1) != P)
    throw Error(
        fmt::format("{}: shape ({}, {}) where ({}, {}) was expected", path, flat.size(0), flat.size(1), n_head * P, P),
        "the trainer writes this file with each snapshot: delete it, or rerun the training");
  return flat.view({n_head, P, P});
}

struct PathAxes {
  torch::Tensor basis;             // (d, k): each column the direction, divided by its sd when `scaled`
  torch::Tensor unit;              // (d, k): the same directions, of unit length (the share of variance they hold)
  std::vector<std::string> names;  // the axes' names on the page: "PC2", "circle axis 1", …
  std::string what;  // for the caption: "the helix … (PC2 and PC4, period 103.9) along its slow axis (PC1)"
  bool scaled = false;
  bool slow_third = false;  // the third axis is a helix's slow axis
  std::string kind;         // what they follow: "turned helix", "helix", "circle" or "" (the top directions)
};

// The path's k ≤ 3 axes in the space of the centred table Wc (the last snapshot's, or the one table's: `whose`),
// fixed for every frame: the helix its analysis found (its circle's two axes, then its slow axis; helix_axes), else
// its strongest circle's pair and the strongest component outside it, else its top principal directions. A helix's
// or circle's axes are each in units of their own sd in Wc, as the circle rule reads them (a circle of a few per cent
// beside a ramp of most of the variance would draw as a line); the top directions keep the table's own units.
// At most the form `most`: a helix drawn as a circle is on its analysis's strongest circle.
PathAxes path_axes(const torch::Tensor& Wc, const Analysis& a, int64_t k, const std::string& whose, PathForm most) {
  auto [U, S, Vh] = torch::linalg_svd(Wc, /*full_matrices=*/false);
  const int64_t n = Vh.size(0), P = Wc.size(0);
  auto pc = [&](int c) { return Vh[c - 1]; };  // component c (1-based)
  HelixAxes found = helix_axes(a);
  if (path_form_of(a) > most) {
    found = {};
    if (most == PathForm::circle && !a.circles.empty())
      found = {"circle",
               {a.circles[0].first, a.circles[0].second, 0},
               {fmt::format("PC{}", a.circles[0].first), fmt::format("PC{}", a.circles[0].second), ""}};
  }
  const auto& [c1, c2, c3] = found.components;
  const bool fits = c1 >= 1 && c2 >= 1 && std::max({c1, c2, c3}) <= n;
  PathAxes out;
  std::vector<torch::Tensor> dirs;
  if (k == 3 && found.kind == "turned helix" && fits &&
      std::all_of(a.helix->curves.begin(), a.helix->curves.end(),
                  [&](const auto& c) { return static_cast<int64_t>(c.size()) == P; })) {
    // The turned axes' curves read back as directions: the least-squares u with Wc u = curve (the curve lies in
    // Wc's columns), V Σ⁻¹ Uᵀ curve over the components above rounding.
    const torch::Tensor keep = S > S[0] * 1e-12;
    for (const auto& curve : a.helix->curves) {
      const torch::Tensor coef = U.t().matmul(torch::tensor(curve, Wc.options())) / S.clamp_min(1e-300);
      dirs.push_back(Vh.t().matmul(coef * keep.to(coef.dtype())));
    }
    out.what = fmt::format(
        "the helix {} analysis found: the circle's two axes (period {:.1f}) and its slow axis, turned within PC{}, "
        "PC{} and PC{}",
        whose, a.helix->circle.period, c1, c2, c3);
  } else if (k == 3 && found.kind == "helix" && fits) {
    dirs = {pc(c1), pc(c2), pc(c3)};
    out.what =
        fmt::format("the helix {} analysis found: its circle (PC{} and PC{}, period {:.1f}) and its slow axis (PC{})",
                    whose, c1, c2, a.helix->circle.period, c3);
  } else if (k >= 2 && found.kind == "circle" && fits) {
    dirs = {pc(c1), pc(c2)};
    out.what =
        fmt::format("the circle {} analysis found (PC{} and PC{}, period {:.1f})", whose, c1, c2, a.circles[0].period);
  }
  if (!dirs.empty()) {
    out.kind = found.kind;
    out.scaled = true;
    out.slow_third = dirs.size() == 3;  // a helix's (a circle's third axis is added below)
    out.names.assign(found.names.begin(), found.names.begin() + static_cast<std::ptrdiff_t>(dirs.size()));
    if (k == 3 && dirs.size() == 2) {
      const int other = c1 == 1 ? (c2 == 2 ? 3 : 2) : 1;  // the strongest component outside the circle
      dirs.push_back(pc(other));
      out.names.push_back(fmt::format("PC{}", other));
      out.what += fmt::format(", with PC{}, the strongest component outside it", other);
    }
  } else {
    for (int c = 1; c <= k; ++c) {
      dirs.push_back(pc(c));
      out.names.push_back(fmt::format("PC{}", c));
    }
    out.what = fmt::format("{} top {} principal directions", whose, k);
  }
  torch::Tensor unit = torch::stack(dirs, 1);  // (d, k)
  unit = unit / unit.norm(2, 0, true).clamp_min(1e-300);
  torch::Tensor basis = unit;
  if (out.scaled) basis = unit / Wc.matmul(unit).square().mean(0, true).sqrt().clamp_min(1e-300);
  // Each axis points away from the first position (its coordinate ≤ 0): an SVD's signs are arbitrary, and with this
  // a table and its mirror image, or two seeds' tables alike up to a reflection, draw their paths the same way round.
  const torch::Tensor flip = 1 - 2 * (Wc[0].matmul(unit) > 0).to(unit.dtype());
  out.unit = unit * flip;
  out.basis = basis * flip;
  return out;
}

}  // namespace

PathForm path_form_of(const Analysis& a) {
  if (a.helix) return PathForm::helix;
  return a.circles.empty() ? PathForm::principal : PathForm::circle;
}

std::vector<int64_t> pick_evenly(int64_t n, int64_t max) {
  std::vector<int64_t> out;
  if (n <= 0) return out;
  if (n <= max) {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
  } else if (max <= 1) {
    out.push_back(n - 1);
  } else {
    for (int64_t k = 0; k < max; ++k)  // steps of (n − 1)/(max − 1) > 1: no index twice
      out.push_back(
          static_cast<int64_t>(std::llround(static_cast<double>(k) * static_cast<double>(n - 1) / (max - 1))));
  }
  return out;
}

namespace {

// The page's data for the tables `raw` (float64 (P, d), one per point); `run` gives layer 0's kernels where it
// wrote them (nullptr: none).
nlohmann::json watch_data_of(const std::vector<const TrajectoryPoint*>& points, const std::vector<torch::Tensor>& raw,
                             const RunFolder* run, const WatchLimits& limits, bool one_table = false) {
  std::vector<torch::Tensor> tables;  // centred
  for (const torch::Tensor& W : raw) tables.push_back(W - W.mean(0, true));
  const int64_t P = tables.front().size(0), d = tables.front().size(1);

  // The path's axes: the last snapshot's helix, circle or top principal directions, one fixed basis for every frame.
  const int64_t comps = std::min<int64_t>({3, d, P - 1});
  const PathAxes axes = path_axes(tables.back(), points.back()->analysis, comps,
                                  one_table ? "the table's" : "the last snapshot's", limits.path_form);
  const torch::Tensor& basis = axes.basis;
  const std::vector<int64_t> sim_rows = pick_evenly(P, limits.max_sim_rows);
  const std::vector<int64_t> path_rows = pick_evenly(P, limits.max_path_rows);
  std::vector<torch::Tensor> paths;
  double scale = 0;
  for (const auto& Wc : tables) {
    paths.push_back(Wc.index_select(0, index_tensor(path_rows)).matmul(basis));  // (rows, k)
    scale = std::max(scale, paths.back().abs().max().item<double>());
  }
  if (!(scale > 0)) scale = 1;
  // Axes in sd units are framed at the rows' reach, at most ±3.5 sd, as the report's helix figure is: a first row
  // far out would squash the circle into the middle. Rows beyond it sit on the frame's edge, and each frame counts
  // them.
  if (axes.scaled) scale = std::min(scale, kSdFrame);

  // Kernels, when the last snapshot has them: averaged down to r × r so that all heads fit the byte budget.
  std::optional<nlohmann::json> last_usage =
      run ? read_snapshot_usage(*run, points.back()->step) : std::optional<nlohmann::json>();
  const int64_t n_head = last_usage ? static_cast<int64_t>((*last_usage)["attention_kernels"]["heads"].size()) : 0;
  int64_t r = 0;
  if (n_head > 0 && limits.kernel_bytes > 0) {
    r = std::min<int64_t>({P, 64, static_cast<int64_t>(std::sqrt(static_cast<double>(limits.kernel_bytes) / n_head))});
    r = std::max<int64_t>(r, std::min<int64_t>(P, 8));
  }

  nlohmann::json data = {{"positions", P}, {"dims", d}};
  data["sim"] = {{"positions", sim_rows}};
  data["path"] = {
      {"positions", path_rows},       {"components", comps}, {"scale", scale},    {"basis_step", points.back()->step},
      {"axes", axes.names},           {"what", axes.what},   {"kind", axes.kind}, {"scaled", axes.scaled},
      {"up", axes.slow_third ? 2 : 1}};  // the 3-D view stands a helix's slow axis upright
  data["kernels"] = r > 0 ? nlohmann::json{{"n_head", n_head}, {"resolution", r}} : nlohmann::json(nullptr);
  // the curves under the slider: size, shape and smoothness of the table, and the losses
  std::vector<Metric> metrics;
  for (const char* key : kCurves)
    for (const Metric& m : scalar_metrics())
      if (std::string(m.key) == key) metrics.push_back(m);
  nlohmann::json metric_names = nlohmann::json::array();
  // `gaps`: a step without a value breaks the curve (the helix's share at steps without a helix); the other curves
  // join their values over such steps (the val loss, measured at its evaluations only)
  for (const Metric& m : metrics)
    metric_names.push_back({{"key", m.key}, {"label", m.label}, {"gaps", std::string(m.key) == "helix_share"}});
  metric_names.push_back({{"key", "train_loss"}, {"label", "train loss"}});
  metric_names.push_back({{"key", "val_loss"}, {"label", "val loss"}});
  data["metrics"] = metric_names;

  nlohmann::json frames = nlohmann::json::array();
  for (size_t f = 0; f < points.size(); ++f) {
    const TrajectoryPoint& p = *points[f];
    const Analysis& a = p.analysis;
    const torch::Tensor& Wc = tables[f];
    nlohmann::json frame = {
        {"step", p.step}, {"train_loss", finite_or_null(p.train_loss)}, {"val_loss", finite_or_null(p.val_loss)}};
    // cosine similarity of the uncentred rows (as the analysis defines it), quantised to 0 … 255
    const torch::Tensor cos = cosine_matrix(raw[f].index_select(0, index_tensor(sim_rows)));
    frame["sim"] = base64_of(((cos.clamp(-1, 1) + 1) / 2 * 255).round().to(torch::kUInt8));
    frame["path"] = base64_of((paths[f] / scale * 32767).round().clamp(-32767, 32767).to(torch::kInt16));
    // rows beyond the frame in the 2-D view, the one the captions describe (its first two axes)
    const torch::Tensor beyond = (paths[f].narrow(1, 0, std::min<int64_t>(2, paths[f].size(1))).abs() > scale).any(1);
    frame["path_outside"] = beyond.sum().item<int64_t>();
    std::vector<int64_t> outside_rows;  // the first four, named in the caption
    for (size_t r = 0; r < path_rows.size() && outside_rows.size() < 4; ++r)
      if (beyond[static_cast<int64_t>(r)].item<bool>()) outside_rows.push_back(path_rows[r] + a.row_offset);
    frame["path_outside_rows"] = outside_rows;
    const double total = Wc.square().sum().item<double>();
    frame["path_share"] = total > 0 ? Wc.matmul(axes.unit).square().sum().item<double>() / total : 0.0;
    std::vector<double> sv = a.singular_values_centered;
    if (static_cast<int64_t>(sv.size()) > limits.max_singular_values)
      sv.resize(static_cast<size_t>(limits.max_singular_values));
    frame["sv"] = sv;
    frame["sv_of"] = a.singular_values_centered.size();  // the panels say "1 … 64 of 128" when cut
    frame["floor"] = a.noise.threshold;
    frame["signal_rank"] = a.noise.signal_rank;
    const size_t bins = std::min<size_t>(a.periodogram.size(), static_cast<size_t>(limits.max_frequencies));
    frame["periodogram"] =
        std::vector<double>(a.periodogram.begin(), a.periodogram.begin() + static_cast<std::ptrdiff_t>(bins));
    frame["periodogram_of"] = a.periodogram.size();
    frame["circle"] = nullptr;
    if (!a.circles.empty())
      frame["circle"] = {{"components", {a.circles[0].first, a.circles[0].second}},
                         {"period", a.circles[0].period},
                         {"turns", a.circles[0].frequency},
                         {"share", a.circles[0].explained}};
    // a helix turned apart: its circle lies across three components, and its period is the turned axes' (the
    // pair's above is the pair's own reading)
    frame["turned_circle"] = nullptr;
    if (a.helix && a.helix->rotated) {
      const std::array<int, 3> space = helix_space(*a.helix);
      frame["turned_circle"] = {
          {"components", space}, {"period", a.helix->circle.period}, {"turns", a.helix->circle.frequency}};
    }
    nlohmann::json values = nlohmann::json::array();
    for (const Metric& m : metrics) values.push_back(metric_json(m, a));
    values.push_back(finite_or_null(p.train_loss));
    values.push_back(finite_or_null(p.val_loss));
    frame["metrics"] = values;
    frame["kernels"] = nullptr;
    std::optional<nlohmann::json> usage =
        f + 1 == points.size() || !run ? last_usage : read_snapshot_usage(*run, p.step);
    if (n_head > 0 && usage && static_cast<int64_t>((*usage)["attention_kernels"]["heads"].size()) == n_head) {
      const torch::Tensor k = r > 0 ? read_kernels(*run, p.step, n_head, P) : torch::Tensor();
      if (k.defined()) {
        const torch::Tensor pooled = torch::adaptive_avg_pool2d(k.unsqueeze(0), {r, r}).squeeze(0);  // (H, r, r)
        frame["kernels"] = base64_of((pooled.clamp(0, 1).sqrt() * 255).round().to(torch::kUInt8));
      }
      if (k.defined() || r == 0) {  // the kinds go with the kernels, or alone when no kernels are wanted
        frame["kinds"] = kinds_of(*usage, "attention_kernels");
        if (usage->contains("data_attention")) frame["text_kinds"] = kinds_of(*usage, "data_attention");
      }
    }
    frames.push_back(std::move(frame));
  }
  data["frames"] = std::move(frames);
  return data;
}

}  // namespace

nlohmann::json watch_data(const std::string& run_dir, const std::vector<TrajectoryPoint>& all_points,
                          const WatchLimits& limits) {
  if (all_points.empty()) throw Error(run_dir + ": no snapshots to show", "train the run first (poslab train)");
  const RunFolder run(run_dir);
  std::vector<const TrajectoryPoint*> points;
  for (int64_t i : pick_evenly(static_cast<int64_t>(all_points.size()), static_cast<int64_t>(limits.max_frames)))
    points.push_back(&all_points[static_cast<size_t>(i)]);
  std::vector<torch::Tensor> raw;  // float64 (P, d), as stored
  for (const auto* p : points) {
    const torch::Tensor W = read_npy_table(run.snapshot_file(p->file));
    if (!raw.empty() && W.sizes() != raw.front().sizes())
      throw Error(
          fmt::format("{}: shape ({}, {}) differs from the first snapshot's ({}, {})", run.snapshot_file(p->file),
                      W.size(0), W.size(1), raw.front().size(0), raw.front().size(1)),
          "a run's snapshots all have the run's table shape: delete the stray file and its index line");
    raw.push_back(W);
  }
  nlohmann::json data = watch_data_of(points, raw, &run, limits);
  // The train and val loss at every evaluation, snapshot or not (at most 512, evenly spaced): the page's loss curves
  // and the latest evaluation beside each step.
  if (is_file(run.metrics())) {
    const std::vector<MetricsRecord> evals = val_evals(read_metrics(run.metrics()));
    nlohmann::json list = nlohmann::json::array();
    for (int64_t i : pick_evenly(static_cast<int64_t>(evals.size()), 512)) {
      const MetricsRecord& e = evals[static_cast<size_t>(i)];
      list.push_back({e.step, finite_or_null(e.train_loss), finite_or_null(e.val_loss)});
    }
    data["evals"] = std::move(list);
  }
  return data;
}

nlohmann::json table_watch_data(const torch::Tensor& W, const Analysis& a, const WatchLimits& limits) {
  TrajectoryPoint p;
  p.analysis = a;
  nlohmann::json data = watch_data_of({&p}, {W.to(torch::kCPU, torch::kFloat64)}, nullptr, limits, true);
  data["table"] = true;
  return data;
}

WatchLimits seeds_limits() {
  WatchLimits l;
  l.max_frames = 48;
  l.max_sim_rows = 64;
  l.max_path_rows = 256;
  l.kernel_bytes = 0;
  l.max_singular_values = 64;
  l.max_frequencies = 32;
  return l;
}

nlohmann::json seeds_watch_data(const std::string& variant, const std::vector<SeedRun>& seeds,
                                const WatchLimits& limits) {
  static const char* const kForms[] = {"principal", "circle", "helix"};
  WatchLimits common = limits;  // the form every seed's last snapshot holds
  for (const SeedRun& s : seeds)
    if (s.points && !s.points->empty())
      common.path_form = std::min(common.path_form, path_form_of(s.points->back().analysis));
  nlohmann::json list = nlohmann::json::array();
  for (const SeedRun& s : seeds) {
    if (!s.points || s.points->empty()) continue;
    list.push_back({{"seed", s.seed},
                    {"name", RunFolder(s.run_dir).name()},
                    {"run", RunFolder(s.run_dir).path()},
                    {"verdict", s.verdict},
                    {"form", kForms[static_cast<int>(path_form_of(s.points->back().analysis))]},
                    {"data", watch_data(s.run_dir, *s.points, common)}});
  }
  if (list.empty())
    throw Error("seeds page of " + variant + ": no run has snapshots of a learned table",
                "the page plays snapshots: train with model.position learned and snapshot.every > 0");
  return {{"variant", variant}, {"path_form", kForms[static_cast<int>(common.path_form)]}, {"seeds", std::move(list)}};
}

std::string write_watch_page(const std::string& run_dir, const std::string& report_dir,
                             const std::vector<TrajectoryPoint>& points) {
  const nlohmann::json data = watch_data(run_dir, points);
  const std::string page = watch_html("poslab: " + RunFolder(run_dir).name(), RunFolder(run_dir).path(), data);
  const std::string path = (fs::path(report_dir) / "watch.html").string();
  make_dirs(report_dir);
  write_file_atomic(path, page);
  spdlog::info("watch page: {} of {}, {:.0f} KB: {}", data["frames"].size(),
               counted(static_cast<int64_t>(points.size()), "snapshot"), static_cast<double>(page.size()) / 1024.0,
               path);
  return path;
}

std::string write_table_watch_page(const torch::Tensor& W, const Analysis& a, const std::string& source,
                                   const std::string& report_dir) {
  const std::string page = watch_html("poslab: one position table", source, table_watch_data(W, a));
  const std::string path = (fs::path(report_dir) / "watch.html").string();
  make_dirs(report_dir);
  write_file_atomic(path, page);
  return path;
}

}  // namespace poslab
