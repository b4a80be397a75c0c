#include "report/compare.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "analysis/agreement.h"
#include "analysis/metric_list.h"
#include "analysis/periodicity.h"
#include "analysis/table_io.h"
#include "config/config.h"
#include "report/figures.h"
#include "run/run_files.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/output_paths.h"
#include "util/plural.h"
#include "util/shell.h"

namespace poslab {
namespace fs = std::filesystem;

Stat pooled(const std::vector<double>& values) {
  Stat s;
  double sum = 0;
  for (double v : values)
    if (std::isfinite(v)) {
      sum += v;
      ++s.n;
    }
  if (s.n == 0) return s;
  s.mean = sum / s.n;
  if (s.n == 1) return s;
  double ss = 0;
  for (double v : values)
    if (std::isfinite(v)) ss += (v - s.mean) * (v - s.mean);
  s.sd = std::sqrt(ss / (s.n - 1));
  return s;
}

// The runs of one variant share their steps / positions: the values at each x are its seeds'.
SeedBand seed_band(const std::vector<SeedCurve>& curves) {
  std::map<double, std::vector<double>> at;
  for (const auto& c : curves)
    for (const auto& [x, y] : c)
      if (std::isfinite(y)) at[x].push_back(y);
  SeedBand b;
  for (const auto& [x, ys] : at) {
    const Stat s = pooled(ys);
    const auto [lowest, highest] = std::minmax_element(ys.begin(), ys.end());
    b.x.push_back(x);
    b.mean.push_back(s.mean);
    b.lo.push_back(s.n > 1 ? std::max(s.mean - s.sd, *lowest) : s.mean);
    b.hi.push_back(s.n > 1 ? std::min(s.mean + s.sd, *highest) : s.mean);
  }
  return b;
}

namespace {

// One run's config, final losses and (with a learned table) its analysed snapshots. nullopt when unfinished.
std::optional<ComparedRun> read_run(const fs::path& dir, const std::string& variant,
                                    std::vector<std::string>& left_out) {
  ComparedRun r;
  r.run_dir = dir.string();
  r.variant = variant;
  const RunFolder run(r.run_dir);
  const Config cfg = read_run_config(run);
  r.seed = cfg.run.seed;
  r.position = cfg.model.position;
  for (const MetricsRecord& rec : val_evals(read_metrics(run.metrics()))) {
    r.step = rec.step;
    r.train_loss = rec.train_loss;
    r.val_loss = rec.val_loss;
  }
  if (r.step < cfg.train.max_steps) {
    spdlog::warn("compare: {} is at step {} of {}: left out until it finishes", r.run_dir, r.step, cfg.train.max_steps);
    left_out.push_back(fmt::format("{} (at step {} of {})", r.run_dir, r.step, cfg.train.max_steps));
    return std::nullopt;
  }
  if (r.position == "learned" && run.has_snapshots()) {
    r.points = analyze_run(r.run_dir);
    r.verdict = judge(r.points);
  }
  return r;
}

// The value of column `key` for a run: a loss, or a headline metric at its last snapshot.
double run_value(const ComparedRun& r, const std::string& key) {
  if (key == "val_loss") return r.val_loss;
  if (key == "train_loss") return r.train_loss;
  if (r.points.empty()) return NAN;
  for (const Metric& m : scalar_metrics())
    if (key == m.key) {
      const double v = m.value(r.points.back().analysis);
      // No circle or helix: a share of 0, so that a variant's mean counts the runs without one.
      return std::isnan(v) && (key == "circle_share" || key == "helix_share") ? 0.0 : v;
    }
  return NAN;
}

// Each folder's finished runs: a sweep's in its order, or the run folder itself.
std::vector<ComparedRun> read_runs(const std::vector<std::string>& dirs, std::vector<std::string>& left_out) {
  std::vector<ComparedRun> runs;
  std::vector<std::string> label;  // each run's variant named by where it was given: SWEEP/VARIANT, or the run's path
  // Each run's folder counted once, or its seed repeats.
  GivenOnce given("compare", "name each run once: a sweep's folder already holds its runs");
  auto once = [&](const fs::path& run, const std::string& as) { given.add(run.string(), as); };
  for (const auto& d : dirs) {
    const fs::path dir = fs::path(d).lexically_normal();
    if (is_sweep_dir(dir.string())) {
      for (const SweepIndex::Run& r : read_sweep_index(dir.string()).runs) {
        const fs::path run = dir / r.run_dir;
        if (!RunFolder(run.string()).has_config_and_metrics()) {
          spdlog::warn("compare: {} has not started: left out", run.string());
          left_out.push_back(run.string() + " (not started)");
          continue;
        }
        once(run, d);
        if (auto cr = read_run(run, r.variant, left_out)) {
          runs.push_back(*cr);
          label.push_back((dir / r.variant).string());
        }
      }
    } else if (RunFolder(dir.string()).has_config_and_metrics()) {
      const fs::path p = dir.filename().empty() ? dir.parent_path() : dir;
      once(p, d);
      if (auto cr = read_run(p, variant_of_run_dir(p.string()), left_out)) {
        runs.push_back(*cr);
        // A seed-S folder stands for its variant's folder (runs/base/seed-1: runs/base), as its variant's name does.
        const bool seed = variant_of_run_dir(p.string()) != p.filename().string();
        label.push_back(seed ? p.parent_path().string() : p.string());
      }
    } else {
      // A folder of runs (runs/): name them, so that the hint is the command to type.
      std::vector<std::string> inside;
      std::error_code ec;
      for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (RunFolder(it->path().string()).has_config_and_metrics() || is_sweep_dir(it->path().string()))
          inside.push_back(it->path().filename().string());
      std::sort(inside.begin(), inside.end());
      std::string hint = "give run folders (runs/NAME) or a sweep's folder (runs/SWEEP)";
      if (!inside.empty()) {  // the command with each folder named (up to 6), or the folder's glob beyond
        const fs::path base = dir.filename().empty() ? dir.parent_path() : dir;
        std::string names, words;
        for (size_t i = 0; i < inside.size() && i < 6; ++i) {
          names += (i ? ", " : "") + inside[i];
          words += " " + shell_word((base / inside[i]).string());
        }
        if (inside.size() > 6) names += ", …";
        hint = fmt::format(
            "it holds {}: {}; compare them with poslab compare{}",
            counted(static_cast<int64_t>(inside.size()), "run or sweep folder", "run or sweep folders"), names,
            inside.size() <= 6 ? words : " " + shell_word(base.string()) + "/* (run and sweep folders only)");
      }
      throw Error(d + ": neither a run folder (config.yaml and metrics.jsonl) nor a sweep folder (sweep.json)", hint);
    }
  }
  // A variant's runs are its seeds: two of one name and one seed (two folders named base, two sweeps with the same
  // variants) are no repetitions, and pooled they would read as seeds that agree. Every run of such a name is named
  // by where it was given instead, one variant each.
  std::set<std::string> clashing;
  std::map<std::pair<std::string, int64_t>, size_t> first;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto [it, fresh] = first.emplace(std::make_pair(runs[i].variant, runs[i].seed), i);
    if (fresh || !clashing.insert(runs[i].variant).second) continue;
    spdlog::warn(
        "compare: {} and {} are both variant {} with seed {}: not two seeds of one variant; each variant "
        "of that name is named by its folder instead",
        runs[it->second].run_dir, runs[i].run_dir, runs[i].variant, runs[i].seed);
  }
  for (size_t i = 0; i < runs.size(); ++i)
    if (clashing.count(runs[i].variant) != 0) runs[i].variant = label[i];
  return runs;
}

// One row per variant, in the order variants first appear, listing its runs.
std::vector<VariantRow> group_by_variant(const std::vector<ComparedRun>& runs) {
  std::vector<VariantRow> rows;
  for (size_t i = 0; i < runs.size(); ++i) {
    auto it = std::find_if(rows.begin(), rows.end(), [&](const VariantRow& v) { return v.variant == runs[i].variant; });
    if (it == rows.end()) {
      rows.push_back(VariantRow{});
      rows.back().variant = runs[i].variant;
      it = rows.end() - 1;
    }
    it->runs.push_back(i);
  }
  return rows;
}

// Fills a row's pooled columns (`keys`), verdict counts and half-change steps from its runs.
void pool_row(VariantRow& row, const std::vector<ComparedRun>& runs, const std::vector<std::string>& keys) {
  row.keys = keys;
  std::vector<double> emerged_at, boundary;
  std::vector<std::vector<double>> half(headline_metrics().size());
  for (const auto& key : keys) {
    std::vector<double> v;
    for (size_t i : row.runs) v.push_back(run_value(runs[i], key));
    row.stats.push_back(pooled(v));
  }
  for (size_t i : row.runs) {
    const auto& r = runs[i];
    if (!r.verdict) continue;
    ++row.judged;
    if (r.verdict->emerged) {
      ++row.emerged;
      if (r.verdict->emerged_from) emerged_at.push_back(static_cast<double>(*r.verdict->emerged_from));
    }
    if (r.verdict->outcome == Outcome::present_from_start) ++row.present;
    const std::vector<HalfChange> hc = half_change_steps(r.points);
    for (size_t k = 0; k < hc.size(); ++k) half[k].push_back(hc[k].step ? static_cast<double>(*hc[k].step) : NAN);
    int outliers = 0;
    for (const auto& b : r.points.back().analysis.boundary) outliers += b.outlier ? 1 : 0;
    row.boundary_outliers += outliers;
    boundary.push_back(outliers);
  }
  row.boundary_outliers_per_run = pooled(boundary);
  for (const auto& key : form_metric_keys()) {
    std::vector<double> v;
    for (size_t i : row.runs) v.push_back(run_value(runs[i], key));
    row.form_keys.push_back(key);
    row.form.push_back(pooled(v));
  }
  std::vector<double> pc1_below;
  for (size_t i : row.runs) {
    if (runs[i].points.empty() || runs[i].points.back().analysis.pc_frequencies.empty()) continue;
    const Analysis& a = runs[i].points.back().analysis;
    const PCFrequency& pc1 = a.pc_frequencies[0];
    if (!(pc1.period > 0)) continue;
    if (period_is_lower_bound(pc1.cycles_per_position * static_cast<double>(a.positions))) {
      ++row.pc1_ramps;
      const double bound = 2.0 * static_cast<double>(a.positions);
      row.pc1_bound = std::isnan(row.pc1_bound) ? bound : std::max(row.pc1_bound, bound);
    } else {
      pc1_below.push_back(pc1.period);
    }
  }
  row.pc1_period_below = pooled(pc1_below);
  std::vector<double> circle_from;
  for (size_t i : row.runs) {
    if (!runs[i].points.empty() && !runs[i].points.back().analysis.circles.empty()) ++row.circled;
    if (runs[i].verdict && runs[i].verdict->circle_from)
      circle_from.push_back(static_cast<double>(*runs[i].verdict->circle_from));
  }
  row.circle_from = pooled(circle_from);
  row.emerged_from = pooled(emerged_at);
  for (const Metric& m : headline_metrics()) row.half_keys.push_back(m.key);
  for (const auto& v : half) row.half_change.push_back(pooled(v));
}

// Agreement of the runs' last tables, pooled over pairs of runs: within each variant, then between variants.
std::vector<AgreementCell> seed_agreement(const Comparison& c) {
  std::vector<torch::Tensor> tables(c.runs.size());
  for (size_t i = 0; i < c.runs.size(); ++i)
    if (!c.runs[i].points.empty())
      tables[i] = read_npy_table(RunFolder(c.runs[i].run_dir).snapshot_file(c.runs[i].points.back().file));
  std::vector<AgreementCell> cells;
  auto cell_of = [&](size_t va, size_t vb) {
    AgreementCell cell;
    cell.a = c.rows[va].variant;
    cell.b = c.rows[vb].variant;
    std::vector<double> cka, residual, similarity, cos2;
    for (size_t i : c.rows[va].runs)
      for (size_t j : c.rows[vb].runs) {
        if ((va == vb && j <= i) || !tables[i].defined() || !tables[j].defined() ||
            tables[i].sizes() != tables[j].sizes())
          continue;
        const Agreement g =
            table_agreement(tables[i], tables[j], c.runs[i].run_dir, c.runs[j].run_dir, 0, /*shuffles=*/0);
        cka.push_back(g.cka);
        residual.push_back(g.procrustes_residual);
        similarity.push_back(g.similarity_correlation);
        if (g.k > 0) cos2.push_back(g.mean_cos2);
        cell.cka_random = g.cka_random;
      }
    cell.pairs = static_cast<int>(cka.size());
    cell.cka = pooled(cka);
    cell.procrustes_residual = pooled(residual);
    cell.similarity_correlation = pooled(similarity);
    cell.mean_cos2 = pooled(cos2);
    if (cell.pairs > 0) cells.push_back(cell);
  };
  for (size_t v = 0; v < c.rows.size(); ++v) cell_of(v, v);
  for (size_t va = 0; va < c.rows.size(); ++va)
    for (size_t vb = va + 1; vb < c.rows.size(); ++vb) cell_of(va, vb);
  return cells;
}

}  // namespace

const std::vector<std::string>& form_metric_keys() {
  static const std::vector<std::string> keys = {"circle_count",         "circle_period",       "circle_share",
                                                "helix_share",          "top_component_share", "pc1_period",
                                                "sinusoid_r2_strongest"};
  return keys;
}

Comparison compare_runs(const std::vector<std::string>& dirs) {
  Comparison c;
  c.runs = read_runs(dirs, c.left_out);
  if (c.runs.empty())
    throw Error("compare: no finished run among " + std::to_string(dirs.size()) + " folder(s)",
                "train the runs first (poslab train, or poslab sweep)");
  std::vector<std::string> keys = {"val_loss", "train_loss"};
  for (const Metric& m : headline_metrics()) keys.push_back(m.key);
  c.rows = group_by_variant(c.runs);
  for (auto& row : c.rows) pool_row(row, c.runs, keys);
  c.agreement = seed_agreement(c);
  return c;
}

std::string comparison_csv(const Comparison& c) {
  std::string h = "variant,runs";
  for (const auto& k : c.rows.front().keys) h += "," + k + "_mean," + k + "_sd";
  h += ",emerged,judged,emerged_from_mean,emerged_from_sd,boundary_outliers,present";
  for (const auto& k : c.rows.front().half_keys) h += "," + k + "_half_step_mean," + k + "_half_step_sd";
  h += ",circled,circle_from_mean,circle_from_sd";
  for (const auto& k : c.rows.front().form_keys) h += "," + k + "_mean," + k + "_sd";
  h += "\n";
  for (const auto& row : c.rows) {
    h += row.variant + "," + std::to_string(row.runs.size());
    for (const auto& s : row.stats) h += "," + gp_number(s.mean) + "," + gp_number(s.sd);
    h += fmt::format(",{},{},{},{},{},{}", row.emerged, row.judged, gp_number(row.emerged_from.mean),
                     gp_number(row.emerged_from.sd), row.boundary_outliers, row.present);
    for (const auto& s : row.half_change) h += "," + gp_number(s.mean) + "," + gp_number(s.sd);
    h +=
        "," + std::to_string(row.circled) + "," + gp_number(row.circle_from.mean) + "," + gp_number(row.circle_from.sd);
    for (const auto& s : row.form) h += "," + gp_number(s.mean) + "," + gp_number(s.sd);
    h += "\n";
  }
  return h;
}

nlohmann::json comparison_json(const Comparison& c) {
  auto value = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j;
  for (const auto& row : c.rows) {
    nlohmann::json r = {{"variant", row.variant},
                        {"emerged", row.emerged},
                        {"judged", row.judged},
                        {"emerged_from", {{"mean", value(row.emerged_from.mean)}, {"sd", value(row.emerged_from.sd)}}},
                        {"boundary_outliers", row.boundary_outliers},
                        {"present", row.present}};
    for (size_t k = 0; k < row.half_keys.size(); ++k)
      r["half_change_step"][row.half_keys[k]] = {
          {"mean", value(row.half_change[k].mean)}, {"sd", value(row.half_change[k].sd)}, {"n", row.half_change[k].n}};
    for (size_t k = 0; k < row.keys.size(); ++k)
      r["metrics"][row.keys[k]] = {
          {"mean", value(row.stats[k].mean)}, {"sd", value(row.stats[k].sd)}, {"n", row.stats[k].n}};
    // form.pc1_period pools every run; these keep the ramps apart, as the page does: how many runs' PC1 is a ramp (its
    // period the lower bound 2P), that bound, and the period over the other runs
    r["pc1_ramps"] = row.pc1_ramps;
    r["pc1_ramp_bound"] = value(row.pc1_bound);
    r["pc1_period_of_the_rest"] = {{"mean", value(row.pc1_period_below.mean)},
                                   {"sd", value(row.pc1_period_below.sd)},
                                   {"n", row.pc1_period_below.n}};
    r["circled"] = row.circled;
    r["circle_from"] = {{"mean", value(row.circle_from.mean)}, {"sd", value(row.circle_from.sd)}};
    for (size_t k = 0; k < row.form_keys.size(); ++k)
      r["form"][row.form_keys[k]] = {
          {"mean", value(row.form[k].mean)}, {"sd", value(row.form[k].sd)}, {"n", row.form[k].n}};
    for (size_t i : row.runs) {
      const auto& run = c.runs[i];
      r["runs"].push_back(
          {{"run_dir", run.run_dir},
           {"seed", run.seed},
           {"step", run.step},
           {"val_loss", value(run.val_loss)},
           {"train_loss", value(run.train_loss)},
           {"emerged", run.verdict ? nlohmann::json(run.verdict->emerged) : nullptr},
           {"outcome", run.verdict ? nlohmann::json(outcome_name(run.verdict->outcome)) : nullptr},
           {"emerged_from",
            run.verdict && run.verdict->emerged_from ? nlohmann::json(*run.verdict->emerged_from) : nullptr}});
    }
    j["variants"].push_back(r);
  }
  j["agreement"] = nlohmann::json::array();
  for (const AgreementCell& cell : c.agreement) {
    nlohmann::json a = {{"a", cell.a}, {"b", cell.b}, {"pairs", cell.pairs}, {"cka_random", value(cell.cka_random)}};
    for (const auto& [key, st] :
         {std::pair{"cka", &cell.cka}, std::pair{"procrustes_residual", &cell.procrustes_residual},
          std::pair{"similarity_correlation", &cell.similarity_correlation}, std::pair{"mean_cos2", &cell.mean_cos2}})
      a[key] = {{"mean", value(st->mean)}, {"sd", value(st->sd)}, {"n", st->n}};
    j["agreement"].push_back(a);
  }
  j["left_out"] = c.left_out;  // runs not finished: not in the figures above
  return j;
}

}  // namespace poslab
