#include "report/compare.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "analysis/agreement.h"
#include "analysis/metric_list.h"
#include "analysis/table_io.h"
#include "config/config.h"
#include "report/figures.h"
#include "report/gnuplot.h"
#include "report/report.h"
#include "run/run_files.h"
#include "util/error.h"
#include "util/fs.h"

namespace poslab {
namespace fs = std::filesystem;
namespace {

std::string num(double v) { return gp_number(v); }

// One run's config, final losses and (with a learned table) its analysed snapshots. nullopt when unfinished.
std::optional<ComparedRun> read_run(const fs::path& dir, const std::string& variant) {
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
  for (const Metric& m : headline_metrics())
    if (key == m.key) return m.value(r.points.back().analysis);
  return NAN;
}

// A column's short header and its full name (the header's tooltip).
std::pair<std::string, std::string> header_of(const std::string& key) {
  if (key == "val_loss") return {"val loss", "validation loss at the last step"};
  if (key == "train_loss") return {"train loss", "train loss (eval estimate) at the last step"};
  for (const Metric& m : headline_metrics())
    if (key == m.key) return {m.column, m.label};
  return {key, key};
}

std::string format_stat(const Stat& s, const char* spec) {
  if (s.n == 0) return "–";
  std::string out = fmt::format(fmt::runtime(spec), s.mean);
  if (s.n > 1) out += " ± " + fmt::format(fmt::runtime(spec), s.sd);
  return out;
}

// (k, v[k − 1]) for one vector of the run's last analysed snapshot (empty without a table), at least `floor`.
std::vector<std::pair<double, double>> last_snapshot_curve(const ComparedRun& r, std::vector<double> Analysis::*field,
                                                           double floor = -INFINITY) {
  std::vector<std::pair<double, double>> curve;
  if (r.points.empty()) return curve;
  const std::vector<double>& v = r.points.back().analysis.*field;
  for (size_t k = 0; k < v.size(); ++k) curve.emplace_back(static_cast<double>(k + 1), std::max(v[k], floor));
  return curve;
}

// Mean and sd over the variant's runs at each x (the runs of one variant share their steps / positions).
struct Band {
  std::vector<double> x, mean, lo, hi;
};
Band band(const std::vector<std::vector<std::pair<double, double>>>& curves) {
  std::map<double, std::vector<double>> at;
  for (const auto& c : curves)
    for (const auto& [x, y] : c) at[x].push_back(y);
  Band b;
  for (const auto& [x, ys] : at) {
    const Stat s = pooled(ys);
    b.x.push_back(x);
    b.mean.push_back(s.mean);
    b.lo.push_back(s.n > 1 ? s.mean - s.sd : s.mean);
    b.hi.push_back(s.n > 1 ? s.mean + s.sd : s.mean);
  }
  return b;
}

// A figure with one mean curve and a ± sd band per variant.
Figure band_figure(const std::string& name, const std::string& title, const std::string& caption,
                   const std::string& xlabel, const std::string& ylabel, const std::vector<std::string>& variants,
                   const std::vector<Band>& bands, const std::string& extra = "") {
  Figure f{name, title, caption, {}, {}};
  std::string plots;
  for (size_t i = 0; i < variants.size(); ++i) {
    if (bands[i].x.empty()) continue;
    const std::string file = name + "_" + gp_slug(variants[i]) + ".dat";
    std::string d = "# x mean mean-sd mean+sd\n";
    for (size_t k = 0; k < bands[i].x.size(); ++k)
      d += fmt::format("{} {} {} {}\n", num(bands[i].x[k]), num(bands[i].mean[k]), num(bands[i].lo[k]), num(bands[i].hi[k]));
    f.data[file] = d;
    plots += fmt::format("{}'{}' using 1:3:4 with filledcurves fs transparent solid 0.18 noborder lc {} notitle, "
                         "'{}' using 1:2 with linespoints lw 2 pt 7 ps 0.5 lc {} title {}",
                         plots.empty() ? "" : ", ", file, i + 1, file, i + 1, gp_quote(variants[i]));
  }
  if (plots.empty()) plots = "NaN notitle";
  const std::string body = "  set xlabel " + gp_quote(xlabel) + "\n  set ylabel " + gp_quote(ylabel) +
                           "\n  set key outside right top\n  set grid\n" + extra + "  plot " + plots + "\n";
  f.script = both_formats(name, body, 1000, 520);
  return f;
}

}  // namespace

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

namespace {

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
        const Agreement g = table_agreement(tables[i], tables[j], c.runs[i].run_dir, c.runs[j].run_dir);
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

Comparison compare_runs(const std::vector<std::string>& dirs) {
  Comparison c;
  for (const auto& d : dirs) {
    const fs::path dir = fs::path(d).lexically_normal();
    if (is_sweep_dir(dir.string())) {
      for (const SweepIndex::Run& r : read_sweep_index(dir.string()).runs) {
        const fs::path run = dir / r.run_dir;
        if (!RunFolder(run.string()).has_config_and_metrics()) {
          spdlog::warn("compare: {} has not started: left out", run.string());
          continue;
        }
        if (auto cr = read_run(run, r.variant)) c.runs.push_back(*cr);
      }
    } else if (RunFolder(dir.string()).has_config_and_metrics()) {
      const fs::path p = dir.filename().empty() ? dir.parent_path() : dir;
      if (auto cr = read_run(p, variant_of_run_dir(p.string()))) c.runs.push_back(*cr);
    } else {
      throw Error(d + ": neither a run folder (config.yaml and metrics.jsonl) nor a sweep folder (sweep.json)",
                  "give run folders (runs/NAME) or a sweep's folder (runs/SWEEP)");
    }
  }
  if (c.runs.empty()) throw Error("compare: no finished run among " + std::to_string(dirs.size()) + " folder(s)",
                                  "train the runs first (poslab train, or poslab sweep)");
  std::vector<std::string> keys = {"val_loss", "train_loss"};
  for (const Metric& m : headline_metrics()) keys.push_back(m.key);
  for (size_t i = 0; i < c.runs.size(); ++i) {
    auto it = std::find_if(c.rows.begin(), c.rows.end(), [&](const VariantRow& v) { return v.variant == c.runs[i].variant; });
    if (it == c.rows.end()) {
      c.rows.push_back(VariantRow{});
      c.rows.back().variant = c.runs[i].variant;
      it = c.rows.end() - 1;
    }
    it->runs.push_back(i);
  }
  for (auto& row : c.rows) {
    row.keys = keys;
    std::vector<double> emerged_at;
    std::vector<std::vector<double>> half(headline_metrics().size());
    for (const auto& key : keys) {
      std::vector<double> v;
      for (size_t i : row.runs) v.push_back(run_value(c.runs[i], key));
      row.stats.push_back(pooled(v));
    }
    for (size_t i : row.runs) {
      const auto& r = c.runs[i];
      if (!r.verdict) continue;
      ++row.judged;
      if (r.verdict->emerged) {
        ++row.emerged;
        if (r.verdict->emerged_from) emerged_at.push_back(static_cast<double>(*r.verdict->emerged_from));
      }
      if (r.verdict->outcome == Outcome::present_from_start) ++row.present;
      const std::vector<HalfChange> hc = half_change_steps(r.points);
      for (size_t k = 0; k < hc.size(); ++k) half[k].push_back(hc[k].step ? static_cast<double>(*hc[k].step) : NAN);
      for (const auto& b : r.points.back().analysis.boundary) row.boundary_outliers += b.outlier ? 1 : 0;
    }
    row.emerged_from = pooled(emerged_at);
    for (const Metric& m : headline_metrics()) row.half_keys.push_back(m.key);
    for (const auto& v : half) row.half_change.push_back(pooled(v));
  }
  c.agreement = seed_agreement(c);
  return c;
}

std::string comparison_csv(const Comparison& c) {
  std::string h = "variant,runs";
  for (const auto& k : c.rows.front().keys) h += "," + k + "_mean," + k + "_sd";
  h += ",emerged,judged,emerged_from_mean,emerged_from_sd,boundary_outliers,present";
  for (const auto& k : c.rows.front().half_keys) h += "," + k + "_half_step_mean," + k + "_half_step_sd";
  h += "\n";
  for (const auto& row : c.rows) {
    h += row.variant + "," + std::to_string(row.runs.size());
    for (const auto& s : row.stats) h += "," + num(s.mean) + "," + num(s.sd);
    h += fmt::format(",{},{},{},{},{},{}", row.emerged, row.judged, num(row.emerged_from.mean), num(row.emerged_from.sd),
                     row.boundary_outliers, row.present);
    for (const auto& s : row.half_change) h += "," + num(s.mean) + "," + num(s.sd);
    h += "\n";
  }
  return h;
}

nlohmann::json comparison_json(const Comparison& c) {
  auto value = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j;
  for (const auto& row : c.rows) {
    nlohmann::json r = {{"variant", row.variant}, {"emerged", row.emerged}, {"judged", row.judged},
                        {"emerged_from", {{"mean", value(row.emerged_from.mean)}, {"sd", value(row.emerged_from.sd)}}},
                        {"boundary_outliers", row.boundary_outliers}, {"present", row.present}};
    for (size_t k = 0; k < row.half_keys.size(); ++k)
      r["half_change_step"][row.half_keys[k]] = {
          {"mean", value(row.half_change[k].mean)}, {"sd", value(row.half_change[k].sd)}, {"n", row.half_change[k].n}};
    for (size_t k = 0; k < row.keys.size(); ++k)
      r["metrics"][row.keys[k]] = {{"mean", value(row.stats[k].mean)}, {"sd", value(row.stats[k].sd)}, {"n", row.stats[k].n}};
    for (size_t i : row.runs) {
      const auto& run = c.runs[i];
      r["runs"].push_back({{"run_dir", run.run_dir}, {"seed", run.seed}, {"step", run.step}, {"val_loss", value(run.val_loss)},
                           {"train_loss", value(run.train_loss)}, {"emerged", run.verdict ? nlohmann::json(run.verdict->emerged) : nullptr},
                           {"outcome", run.verdict ? nlohmann::json(outcome_name(run.verdict->outcome)) : nullptr},
                           {"emerged_from", run.verdict && run.verdict->emerged_from ? nlohmann::json(*run.verdict->emerged_from) : nullptr}});
    }
    j["variants"].push_back(r);
  }
  j["agreement"] = nlohmann::json::array();
  for (const AgreementCell& cell : c.agreement) {
    nlohmann::json a = {{"a", cell.a}, {"b", cell.b}, {"pairs", cell.pairs}, {"cka_random", value(cell.cka_random)}};
    for (const auto& [key, st] : {std::pair{"cka", &cell.cka}, std::pair{"procrustes_residual", &cell.procrustes_residual},
                                  std::pair{"similarity_correlation", &cell.similarity_correlation},
                                  std::pair{"mean_cos2", &cell.mean_cos2}})
      a[key] = {{"mean", value(st->mean)}, {"sd", value(st->sd)}, {"n", st->n}};
    j["agreement"].push_back(a);
  }
  return j;
}

std::string write_comparison(const Comparison& c, const std::string& out_dir) {
  make_dirs(out_dir);
  write_file_atomic((fs::path(out_dir) / "comparison.csv").string(), comparison_csv(c));
  write_file_atomic((fs::path(out_dir) / "comparison.json").string(), comparison_json(c).dump(2) + "\n");

  std::vector<std::string> variants;
  for (const auto& row : c.rows) variants.push_back(row.variant);
  auto bands_of = [&](auto curve_of) {
    std::vector<Band> out;
    for (const auto& row : c.rows) {
      std::vector<std::vector<std::pair<double, double>>> curves;
      for (size_t i : row.runs) curves.push_back(curve_of(c.runs[i]));
      out.push_back(band(curves));
    }
    return out;
  };
  std::vector<Figure> figures;
  figures.push_back(band_figure(
      "val_loss", "Validation loss", "Mean validation loss of each variant over its seeds at every evaluation; the "
      "band is ± one standard deviation over the seeds.", "step", "val loss", variants, bands_of([](const ComparedRun& r) {
        std::vector<std::pair<double, double>> curve;
        for (const MetricsRecord& rec : val_evals(read_metrics(RunFolder(r.run_dir).metrics())))
          if (std::isfinite(rec.val_loss)) curve.emplace_back(static_cast<double>(rec.step), rec.val_loss);
        return curve;
      })));
  for (const Metric& m : headline_metrics()) {
    figures.push_back(band_figure(
        std::string("trajectory_") + m.key, std::string(m.label) + " over training",
        std::string("The position table's ") + m.label + " at each snapshot, mean of each variant's seeds with a ± sd "
        "band (docs/analysis.md defines it). Variants without a learned table have none.",
        "step", m.column, variants, bands_of([&m](const ComparedRun& r) {
          std::vector<std::pair<double, double>> curve;
          for (const auto& p : r.points) curve.emplace_back(static_cast<double>(p.step), m.value(p.analysis));
          return curve;
        })));
  }
  figures.push_back(band_figure(
      "cos_by_offset", "Cosine by offset at the last snapshot",
      "Mean cosine between rows i and i + k of the final table, against the offset k: a smooth table stays high for "
      "small k and falls with distance; a random one is near 0 everywhere. Mean ± sd over seeds.",
      "offset k", "mean cos(w_i, w_{i+k})", variants, bands_of([](const ComparedRun& r) { return last_snapshot_curve(r, &Analysis::cos_by_offset); })));
  figures.push_back(band_figure(
      "spectrum", "Explained variance at the last snapshot",
      "Share of the final (centred) table's variance in each principal component, log scale: low-rank tables fall "
      "steeply after a few components. Mean ± sd over seeds.",
      "component k", "explained variance", variants, bands_of([](const ComparedRun& r) { return last_snapshot_curve(r, &Analysis::explained_variance, 1e-12); }), "  set logscale y\n  set format y '10^{%T}'\n  set yrange [1e-6:1]\n"));
  bool evaluated = false;
  for (const auto& r : c.runs) evaluated = evaluated || !read_position_loss(RunFolder(r.run_dir).position_loss()).empty();
  if (evaluated)
    figures.push_back(band_figure(
        "position_loss", "Validation loss by position", "Loss of the token predicted at each position of the context "
        "(from poslab eval), mean ± sd over the seeds that were evaluated.", "position", "val loss", variants,
        bands_of([](const ComparedRun& r) {
          std::vector<std::pair<double, double>> curve;
          const std::vector<double> loss = read_position_loss(RunFolder(r.run_dir).position_loss());
          for (size_t i = 0; i < loss.size(); ++i) curve.emplace_back(static_cast<double>(i), loss[i]);
          return curve;
        })));

  // The table: losses and the headline metrics at the last snapshot, mean ± sd over seeds.
  std::string t = "<div class=\"wide\"><table class=\"compare\">\n<tr><th>variant</th><th>runs</th>";
  for (const auto& k : c.rows.front().keys) {
    const auto [head, full] = header_of(k);
    t += "<th title=\"" + html_escape(full) + "\">" + html_escape(head) + "</th>";
  }
  t += "<th title=\"absent at the first snapshot; low rank (above the noise floor) and smooth (against shuffled copies) from a step to the end\">emerged</th>"
       "<th>from step</th><th title=\"summed over the runs' last snapshots\">boundary outliers</th></tr>\n";
  for (const auto& row : c.rows) {
    t += "<tr><td>" + html_escape(row.variant) + "</td><td>" + std::to_string(row.runs.size()) + "</td>";
    for (size_t k = 0; k < row.keys.size(); ++k) {
      const char* spec = "{:.4f}";  // losses
      for (const Metric& m : headline_metrics())
        if (row.keys[k] == m.key) spec = m.format;
      t += "<td>" + format_stat(row.stats[k], spec) + "</td>";
    }
    if (row.judged == 0) {
      const std::string& position = c.runs[row.runs.front()].position;
      t += "<td>" + std::string(position == "none" ? "no table" : position == "sinusoidal" ? "fixed table" : "no snapshots") +
           "</td><td>–</td><td>–</td></tr>\n";
    }
    else
      t += fmt::format("<td>{} of {}{}</td><td>{}</td><td>{}</td></tr>\n", row.emerged, row.judged,
                       row.present > 0 ? fmt::format(" ({} present from the start)", row.present) : std::string(),
                       row.emerged == 0 ? std::string("not") : format_stat(row.emerged_from, "{:.0f}"), row.boundary_outliers);
  }
  t += "</table></div>\n";
  // When each headline metric moved: its half-change step, mean ± sd over the seeds.
  t += "<h3>When each metric moved</h3>\n<p>The half-change step of a run's metric: the first snapshot where it has "
       "moved half of its change from the first snapshot to the last; mean ± sd over the variant's seeds. Less "
       "sensitive to a threshold than “emerged from”.</p>\n<div class=\"wide\"><table class=\"compare\">\n<tr><th>variant</th>";
  for (const Metric& m : headline_metrics()) t += "<th title=\"" + html_escape(m.label) + "\">" + html_escape(m.column) + "</th>";
  t += "</tr>\n";
  for (const auto& row : c.rows) {
    if (row.judged == 0) continue;
    t += "<tr><td>" + html_escape(row.variant) + "</td>";
    for (const auto& s : row.half_change) t += "<td>" + format_stat(s, "{:.0f}") + "</td>";
    t += "</tr>\n";
  }
  t += "</table></div>\n";
  if (!c.agreement.empty()) {
    t += "<h3>Do the seeds learn the same table?</h3>\n<p>The runs' last tables compared up to rotation and scale "
         "of the embedding space, over every pair of runs: a variant with itself pools the pairs of its seeds, two "
         "variants every cross pair. Linear CKA (1: the same geometry; independent random tables of this shape: " +
         format_stat(Stat{c.agreement.front().cka_random, NAN, 1}, "{:.2f}") +
         "), the Procrustes residual (0: one table is a rotated, rescaled copy of the other), the correlation of "
         "the two cosine-similarity matrices, and the mean cos² of the principal angles between the components "
         "above the noise floor (random subspaces: near 0). docs/analysis.md, “Seed agreement”.</p>\n"
         "<div class=\"wide\"><table class=\"compare\">\n<tr><th>variants</th><th>pairs</th><th>CKA</th>"
         "<th>Procrustes residual</th><th>similarity r</th><th>mean cos²</th></tr>\n";
    for (const AgreementCell& cell : c.agreement)
      t += "<tr><td>" + html_escape(cell.a == cell.b ? cell.a + " (seeds)" : cell.a + " vs " + cell.b) + "</td><td>" +
           std::to_string(cell.pairs) + "</td><td>" + format_stat(cell.cka, "{:.3f}") + "</td><td>" +
           format_stat(cell.procrustes_residual, "{:.3f}") + "</td><td>" +
           format_stat(cell.similarity_correlation, "{:.3f}") + "</td><td>" + format_stat(cell.mean_cos2, "{:.3f}") +
           "</td></tr>\n";
    t += "</table></div>\n";
  }
  std::string runs_list = "<details><summary>Runs</summary>\n<ul>\n";
  for (const auto& r : c.runs)
    runs_list += fmt::format("<li>{} seed {}: {} (step {}, val {:.4f})</li>\n", html_escape(r.variant), r.seed,
                             html_escape(fs::absolute(r.run_dir).string()), r.step, r.val_loss);
  runs_list += "</ul>\n</details>\n";
  const std::string top =
      "<style>table.compare { font-size: 0.9em; } table.compare td { white-space: nowrap; }\n"
      "table.compare th, table.compare td { padding: 0.25em 0.4em; white-space: nowrap; } div.wide { overflow-x: auto; }</style>\n"
      "<h2>Variants</h2>\n<p>Each cell: mean ± sample standard deviation over the variant's seeds (one seed: the value "
      "alone); hover a column's name for its full name. Table metrics at each run's last snapshot; “structure emerged”: absent at step 0, then low rank (components "
      "above the noise floor hold most of the variance) and smooth (adjacent cosine far above shuffled copies') from a "
      "step to the end (docs/analysis.md). The same table as "
      "<a href=\"comparison.csv\">CSV</a> and <a href=\"comparison.json\">JSON</a>.</p>\n" + t + runs_list +
      "<h2>Figures</h2>\n";
  const std::string html = report_page("poslab compare: " + std::to_string(c.rows.size()) + " variants, " +
                                           std::to_string(c.runs.size()) + " runs",
                                       fs::absolute(out_dir).string(), top, figures);
  const std::string index = (fs::path(out_dir) / "index.html").string();
  write_file_atomic(index, html);  // the page first: the tables in it stand without the figures
  draw_figures(out_dir, figures);
  return index;
}

}  // namespace poslab
