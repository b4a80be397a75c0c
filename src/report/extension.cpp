#include "report/extension.h"

#include <nlohmann/json.hpp>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <sstream>

#include "analysis/analysis.h"
#include "analysis/table_io.h"
#include "config/config.h"
#include "report/report.h"
#include "run/run_files.h"
#include "util/error.h"
#include "util/fs.h"

namespace poslab {
namespace fs = std::filesystem;

namespace {

struct FineTune {
  std::string name;          // its run folder's name
  std::vector<double> loss;  // by position, from its poslab eval (may be empty)
  double first_val = NAN, last_val = NAN;
  int64_t last_step = 0;
  int64_t matched_step = -1;  // first eval step whose val loss <= the target, -1 if none
};

struct Extension {
  ExtensionInfo info;        // checkpoint.extension.json
  std::vector<double> loss;  // by position, from poslab eval of the extended checkpoint (may be empty)
  std::vector<FineTune> fine_tunes;
};

std::string canonical(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(path, ec);
  return ec ? fs::absolute(path).lexically_normal().string() : p.string();
}

double mean_over(const std::vector<double>& v, size_t begin, size_t end) {
  end = std::min(end, v.size());
  if (begin >= end) return NAN;
  return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(begin), v.begin() + static_cast<std::ptrdiff_t>(end),
                         0.0) /
         static_cast<double>(end - begin);
}

std::string value_cell(double v, const char* spec = "{:.4f}") {
  return std::isfinite(v) ? fmt::format(fmt::runtime(spec), v) : std::string("–");
}

// The val-loss evals of a run's metrics.jsonl, in step order (none without the file).
std::vector<MetricsRecord> val_losses(const RunFolder& run) {
  std::error_code ec;
  if (!fs::is_regular_file(run.metrics(), ec)) return {};
  return val_evals(read_metrics(run.metrics()));
}

// The runs beside `run` (same parent folder) whose train.init_from is `checkpoint`.
std::vector<FineTune> fine_tunes_of(const fs::path& run, const std::string& checkpoint, double target) {
  std::vector<FineTune> out;
  std::error_code ec;
  const std::string wanted = canonical(checkpoint);
  for (const auto& entry : fs::directory_iterator(run.parent_path(), ec)) {
    const RunFolder sibling(entry.path().string());
    if (!entry.is_directory(ec) || !fs::is_regular_file(sibling.config(), ec)) continue;
    Config cfg;
    try {
      cfg = read_run_config(sibling);
    } catch (const Error&) {
      continue;  // not a poslab run of this version: not ours to judge here
    }
    if (cfg.train.init_from.empty() || canonical(cfg.train.init_from) != wanted) continue;
    FineTune f;
    f.name = entry.path().filename().string();
    f.loss = read_position_loss(sibling.position_loss());
    const auto vals = val_losses(sibling);
    if (!vals.empty()) {
      f.first_val = vals.front().val_loss;
      f.last_val = vals.back().val_loss;
      f.last_step = vals.back().step;
    }
    for (const MetricsRecord& r : vals)
      if (std::isfinite(target) && r.val_loss <= target) {
        f.matched_step = r.step;
        break;
      }
    out.push_back(std::move(f));
  }
  std::sort(out.begin(), out.end(), [](const FineTune& a, const FineTune& b) { return a.name < b.name; });
  return out;
}

// One curve of a loss-by-position figure: a method keeps its colour; its fine-tuned run is dashed.
struct LossCurve {
  std::string label;
  std::vector<double> loss;
  std::string colour;
  bool dashed = false;
};

std::string method_colour(const std::string& method) {
  static const std::vector<std::pair<std::string, std::string>> colours = {
      {"linear", "#1b9e77"}, {"cubic", "#d95f02"}, {"nearest", "#7570b3"}, {"copy", "#e7298a"}, {"random", "#a6761d"}};
  for (const auto& [m, c] : colours)
    if (m == method) return c;
  return "#666666";
}

// Loss by position, one curve per series; a dashed line at `T` where the trained positions end.
Figure loss_by_position_figure(const std::string& name, const std::string& caption,
                               const std::vector<LossCurve>& series, int64_t T) {
  Figure f{name, "Loss at each position, past the trained context", caption, {}, {}};
  std::string plots;
  for (const auto& c : series) {
    if (c.loss.empty()) continue;
    const std::string file = data_file(f, name, c.label);
    std::string d = "# position loss\n";
    for (size_t i = 0; i < c.loss.size(); ++i) d += fmt::format("{} {}\n", i, gp_number(c.loss[i]));
    f.data[file] = d;
    plots +=
        fmt::format("{}'{}' using 1:2 with lines lw {} lc rgb '{}'{} title {} noenhanced", plots.empty() ? "" : ", ",
                    file, c.dashed ? 1.5 : 2, c.colour, c.dashed ? " dt 2" : "", gp_quote(c.label));
  }
  f.script = both_formats(
      name,
      fmt::format("  set xlabel 'position in the context'\n  set ylabel 'cross-entropy (nats/token)'\n  set grid\n"
                  "  set key outside right\n  set autoscale xfix\n"
                  "  set arrow 1 from {T}-0.5, graph 0 to {T}-0.5, graph 1 nohead dt 2 lc rgb 'gray30'\n"
                  "  set label 1 'trained positions end' at {T}, graph 0.95 left textcolor rgb 'gray30'\n"
                  "  plot {p}\n",
                  fmt::arg("T", T), fmt::arg("p", plots.empty() ? std::string("0 notitle") : plots)),
      1200, 560);
  return f;
}

// The section of a run that has extensions in RUN_DIR/extend/.
void extensions_of_this_run(const fs::path& run, ExtensionSection& out) {
  std::vector<Extension> exts;
  for (const std::string& path : extension_infos_of(RunFolder(run.string()))) {
    Extension e;
    e.info = read_extension_info(path);
    e.loss = read_position_loss(RunFolder(fs::path(path).parent_path().string()).position_loss());
    exts.push_back(std::move(e));
  }
  if (exts.empty()) return;
  const auto order = [](const std::string& m) {
    static const std::vector<std::string> methods = {"linear", "cubic", "nearest", "copy", "random"};
    return std::find(methods.begin(), methods.end(), m) - methods.begin();
  };
  std::sort(exts.begin(), exts.end(), [&](const Extension& a, const Extension& b) {
    return a.info.to != b.info.to ? a.info.to < b.info.to : order(a.info.method) < order(b.info.method);
  });
  const RunFolder folder(run.string());
  const auto own_vals = val_losses(folder);
  const double target = own_vals.empty() ? NAN : own_vals.back().val_loss;
  for (auto& e : exts) e.fine_tunes = fine_tunes_of(run, e.info.checkpoint, target);

  const std::vector<double> original = read_position_loss(folder.position_loss());
  const int64_t T = exts.front().info.from;
  auto metric = [](const nlohmann::json& table, const char* key, const char* spec) {
    return table.contains(key) && table[key].is_number() ? value_cell(table[key].get<double>(), spec)
                                                         : std::string("–");
  };
  std::string h =
      "<h2>Extending the context</h2>\n<p>The trained table stretched past its " + std::to_string(T) +
      " rows by <code>poslab extend</code>; the loss of each extended model by <code>poslab eval</code> "
      "(val split) over the trained positions and the new ones, and the runs that fine-tuned an extension "
      "(<code>poslab train --init-from</code>) with the first eval step at which their val loss reached this "
      "run's final val loss (" +
      value_cell(target) +
      ").</p>\n<div style=\"overflow-x:auto\"><table>\n"
      "<tr><th>table</th><th>rows</th><th>eff rank</th><th>adj cos</th><th>interp 4</th><th>probe R²</th>"
      "<th>loss 0–" +
      std::to_string(T - 1) + "</th><th>loss past " + std::to_string(T - 1) +
      "</th><th>fine-tuned run</th><th>val at step 0</th><th>steps to reach " + value_cell(target) +
      "</th><th>val at the end</th><th>loss past " + std::to_string(T - 1) + ", fine-tuned</th></tr>\n";
  const nlohmann::json& before = exts.front().info.table_before;
  h += fmt::format(
      "<tr><td>trained</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>–</td>"
      "<td></td><td></td><td></td><td></td><td></td></tr>\n",
      T, metric(before, "effective_rank", "{:.2f}"), metric(before, "adjacent_cosine", "{:.3f}"),
      metric(before, "interpolation_error_s4", "{:.3f}"), metric(before, "probe_r2", "{:.3f}"),
      original.empty() ? std::string("run poslab eval") : value_cell(mean_over(original, 0, T)));
  std::vector<LossCurve> curves = {{"trained (" + std::to_string(T) + ")", original, "#000000"}};
  for (const auto& e : exts) {
    const std::string& method = e.info.method;
    const int64_t N = e.info.to;
    const nlohmann::json& after = e.info.table_after;
    const std::string row_start = fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
        html_escape(method), N, metric(after, "effective_rank", "{:.2f}"), metric(after, "adjacent_cosine", "{:.3f}"),
        metric(after, "interpolation_error_s4", "{:.3f}"), metric(after, "probe_r2", "{:.3f}"),
        e.loss.empty() ? std::string("–") : value_cell(mean_over(e.loss, 0, T)),
        e.loss.empty() ? std::string("run poslab eval") : value_cell(mean_over(e.loss, T, e.loss.size())));
    curves.push_back({fmt::format("{} ({})", method, N), e.loss, method_colour(method)});
    if (e.fine_tunes.empty()) h += row_start + "<td>none</td><td></td><td></td><td></td><td></td></tr>\n";
    for (const auto& f : e.fine_tunes) {
      h += row_start +
           fmt::format("<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", html_escape(f.name),
                       value_cell(f.first_val),
                       f.matched_step >= 0 ? std::to_string(f.matched_step) : fmt::format("not in {}", f.last_step),
                       value_cell(f.last_val),
                       f.loss.empty() ? std::string("–") : value_cell(mean_over(f.loss, T, f.loss.size())));
      if (!f.loss.empty())
        curves.push_back({fmt::format("{} ({}), {}", method, N, f.name), f.loss, method_colour(method), true});
    }
  }
  h += "</table></div>\n<p>Losses are nats per token. Steps are counted by the fine-tuning run's evals "
       "(train.eval_every). A run's loss by position needs <code>poslab eval</code> of its checkpoint.</p>\n";
  out.html += h;
  out.figures.push_back(loss_by_position_figure(
      "extension_loss",
      "Mean val loss of the token predicted at each position: the trained model up to its block_size, each extended "
      "model out to its new length (solid), and the runs that fine-tuned it (dashed, the same colour); poslab eval of "
      "each.",
      curves, T));
  // The similarity of up to three extended tables, interpolations first.
  std::vector<Analysis> tables;
  std::vector<std::string> labels;
  for (const auto& e : exts) {
    if (tables.size() == 3) break;
    try {
      const std::string& npy = e.info.table;  // the extended table poslab extend wrote beside its checkpoint
      if (npy.empty()) continue;
      AnalysisOptions opt;
      opt.keep_cosine_matrix = true;
      tables.push_back(analyze_table(read_npy_table(npy), npy, opt));
      labels.push_back(fmt::format("{} ({})", e.info.method, e.info.to));
    } catch (const Error&) {
      // the extended table was moved or deleted: its row stays, its heatmap goes
    }
  }
  if (!tables.empty()) {
    std::vector<Series> series;
    for (size_t i = 0; i < tables.size(); ++i) series.push_back({labels[i], &tables[i]});
    Figure sim = similarity_heatmaps_figure(series, "extension_similarity");
    sim.title = "Similarity of the extended tables";
    sim.caption =
        "Cosine similarity between every pair of rows of the extended tables. An interpolated table keeps "
        "the trained band, stretched; a tiled copy repeats it; the random control shows noise past the "
        "trained rows.";
    out.figures.push_back(sim);
  }
}

}  // namespace

ExtensionSection extension_section(const std::string& run_dir) {
  ExtensionSection out;
  const fs::path run = fs::absolute(run_dir).lexically_normal();
  extensions_of_this_run(run, out);
  // The run itself started from an extended checkpoint: its loss by position before and after.
  const RunFolder folder(run.string());
  std::error_code ec;
  if (!fs::is_regular_file(folder.config(), ec)) return out;
  Config cfg;
  try {
    cfg = read_run_config(folder);
  } catch (const Error&) {
    return out;
  }
  if (cfg.model.extended_from == 0 || cfg.train.init_from.empty()) return out;
  const int64_t T = cfg.model.extended_from;
  // The extended checkpoint's own poslab eval wrote beside it (its folder is its run folder).
  const auto before = read_position_loss(RunFolder::of_checkpoint(cfg.train.init_from).position_loss());
  const auto after = read_position_loss(folder.position_loss());
  out.html += fmt::format(
      "<h2>Started from an extended table</h2>\n<p>This run's weights came from <code>{}</code>: a model trained with "
      "{} positions whose table was extended to {} by <b>{}</b>. Loss over positions 0–{} / {}–{}: before this run "
      "{} / {}, after {} / {} (poslab eval of each; – where it was not run).</p>\n",
      html_escape(cfg.train.init_from), T, cfg.model.block_size, html_escape(cfg.model.extend_method), T - 1, T,
      cfg.model.block_size - 1, value_cell(mean_over(before, 0, T)), value_cell(mean_over(before, T, before.size())),
      value_cell(mean_over(after, 0, T)), value_cell(mean_over(after, T, after.size())));
  if (!before.empty() || !after.empty())
    out.figures.push_back(loss_by_position_figure(
        "extension_loss_finetune",
        "Mean val loss at each position of the extended model before this run (poslab eval of its init_from "
        "checkpoint) and after it (poslab eval of this run's checkpoint).",
        {{"before (extended, " + cfg.model.extend_method + ")", before, method_colour(cfg.model.extend_method)},
         {"after this run", after, method_colour(cfg.model.extend_method), true}},
        T));
  return out;
}

}  // namespace poslab
