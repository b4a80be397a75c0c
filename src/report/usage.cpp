#include "report/usage.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>

#include "analysis/table_io.h"
#include "report/report.h"
#include "run/run_files.h"
#include "util/error.h"

namespace poslab {
namespace {

std::string json_cell(const nlohmann::json& v, const char* spec) {
  return v.is_number() ? fmt::format(fmt::runtime(spec), v.get<double>()) : std::string("–");
}

// A head's summary, NaN where the file has none (null).
double head_number(const nlohmann::json& head, const char* key) {
  return head.is_object() && head.contains(key) && head[key].is_number() ? head[key].get<double>() : NAN;
}

std::string number_cell(double v, const char* spec) {
  return std::isfinite(v) ? fmt::format(fmt::runtime(spec), v) : std::string("–");
}

// Head i of a usage file's kernels under `key`; null when absent.
nlohmann::json head_of(const nlohmann::json& usage, const char* key, size_t i) {
  if (!usage.contains(key)) return nullptr;
  const auto& heads = usage[key]["heads"];
  return i < heads.size() ? heads[i] : nlohmann::json();
}

// One row per head and step: its position-only kind and summaries, and the kind it shows on real text.
std::string heads_table(const nlohmann::json& first, const nlohmann::json& last, int64_t first_step,
                        int64_t last_step) {
  const bool text = last.contains("data_attention");
  std::string h =
      "<div style=\"overflow-x:auto\"><table>\n<tr><th>head</th><th>step</th><th>kind</th><th>mass at 0</th>"
      "<th>mass at 1</th><th>on position 0</th><th>50 % within (positions)</th><th>uniform: 50 % within</th>"
      "<th>90 % within</th><th>decay length (positions)</th>" +
      std::string(text ? "<th>on text: kind</th><th>on text: 50 % within</th>" : "") + "</tr>\n";
  const size_t n_head = last["attention_kernels"]["heads"].size();
  for (size_t i = 0; i < n_head; ++i)
    for (const auto& [step, usage] : {std::pair{first_step, &first}, std::pair{last_step, &last}}) {
      const nlohmann::json head = head_of(*usage, "attention_kernels", i);
      if (head.is_null()) continue;
      h += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
          "<td>{}</td><td>{}</td>",
          i, step, html_escape(head["kind"].get<std::string>()),
          number_cell(head_number(head, "mass_offset0"), "{:.2f}"),
          number_cell(head_number(head, "mass_offset1"), "{:.2f}"),
          number_cell(head_number(head, "mass_first"), "{:.2f}"), number_cell(head_number(head, "offset50"), "{:.0f}"),
          number_cell(head_number(head, "uniform_offset50"), "{:.0f}"),
          number_cell(head_number(head, "offset90"), "{:.0f}"),
          number_cell(head_number(head, "decay_length"), "{:.1f}"));
      if (text) {
        const nlohmann::json seen = head_of(*usage, "data_attention", i);
        h += seen.is_null() ? "<td>–</td><td>–</td>"
                            : fmt::format("<td>{}</td><td>{}</td>", html_escape(seen["kind"].get<std::string>()),
                                          number_cell(head_number(seen, "offset50"), "{:.0f}"));
      }
      h += "</tr>\n";
    }
  return h + "</table></div>\n";
}

std::string geometry_row(const char* label, const nlohmann::json& g) {
  const auto& angles = g["principal_angles_degrees"];
  return fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", label,
                     g.value("k", 0), angles.empty() ? "–" : json_cell(angles[0], "{:.0f}°"),
                     json_cell(g["mean_token_variance_ratio"], "{:.2f}"),
                     json_cell(g["mean_token_spectrum_quantile"], "{:.2f}"), json_cell(g["max_abs_cosine"], "{:.3f}"));
}

// A head's offset profile as gnuplot data, "offset attention" per line (floored at 1e-12 for the log scale).
std::string profile_data(const nlohmann::json& head) {
  std::string d = "# offset attention\n";
  const auto& profile = head["offset_profile"];
  for (size_t k = 0; k < profile.size(); ++k)
    d += fmt::format("{} {}\n", k, gp_number(std::max(profile[k].get<double>(), 1e-12)));
  return d;
}

Figure kernel_heatmaps(const torch::Tensor& flat, int64_t n_head, int64_t step) {
  Figure f{
      "attention_kernels",
      "Layer 0's position-only attention kernels",
      fmt::format("The attention each head of layer 0 would give from positions alone at step {}: softmax over the "
                  "keys j ≤ i of its query and key maps applied to LayerNorm(p_i + mean token embedding), as the "
                  "model applies them (docs/analysis.md). Rows are queries; colour is the square root of the attention "
                  "weight, as on the watch page, so that a head spread thinly over many keys shows too (the colour bar "
                  "is labelled in weights).",
                  step),
      {},
      {}};
  const int64_t P = flat.size(1);
  std::string body = fmt::format(
      "  set palette defined (0 'white', 0.15 '#c6dbef', 0.4 '#6baed6', 1 '#08306b')\n"
      "  set cbrange [0:1]\n  set cbtics ('0' 0, '0.01' 0.1, '0.1' 0.316, '0.25' 0.5, '0.5' 0.707, '1' 1)\n"
      "  set size ratio -1\n  set xlabel 'key position j'\n"
      "  set ylabel 'query position i'\n  set xrange [-0.5:{0}-0.5]\n  set yrange [{0}-0.5:-0.5]\n"
      "  set multiplot layout 1,{1}\n",
      P, n_head);
  const auto m = flat.to(torch::kFloat64).contiguous();
  const double* p = m.data_ptr<double>();
  for (int64_t h = 0; h < n_head; ++h) {
    std::string d;
    for (int64_t i = 0; i < P; ++i) {
      for (int64_t j = 0; j < P; ++j) d += (j ? " " : "") + fmt::format("{:.4g}", p[(h * P + i) * P + j]);
      d += "\n";
    }
    const std::string file = fmt::format("kernel_head{}.dat", h);
    f.data[file] = d;
    body += fmt::format("  set title 'head {}'\n  plot '{}' matrix using 1:2:(sqrt($3)) with image notitle\n", h, file);
  }
  body += "  unset multiplot\n";
  f.script = both_formats(f.name, body, static_cast<int>(std::min<int64_t>(1600, 340 * n_head + 120)), 420);
  return f;
}

Figure offset_profiles(const nlohmann::json& first, const nlohmann::json& last, int64_t first_step, int64_t last_step) {
  Figure f{"attention_offsets",
           "Attention by offset",
           fmt::format(
               "Mean position-only attention at each offset δ = i − j (over the queries that have it), per head: "
               "step {} solid, step {} dashed, log scale. A local head puts its mass at 0 or 1; a decaying head "
               "falls along a line (an exponential); a uniform head (1/(i + 1) on each key of query i) falls slowly, "
               "the queries that reach offset δ being the later ones, whose weights are smaller.",
               last_step, first_step),
           {},
           {}};
  std::string plots;
  const auto& heads = last["attention_kernels"]["heads"];
  for (size_t h = 0; h < heads.size(); ++h)
    for (const auto& [step, usage, dashed] :
         {std::tuple{last_step, &last, false}, std::tuple{first_step, &first, true}}) {
      const auto& hs = (*usage)["attention_kernels"]["heads"];
      if (h >= hs.size()) continue;
      const std::string file = fmt::format("offsets_head{}_step{}.dat", h, step);
      f.data[file] = profile_data(hs[h]);
      plots += fmt::format(
          "{}'{}' using 1:2 with lines lw 2 lc {}{} title '{}'", plots.empty() ? "" : ", ", file, h + 1,
          dashed ? " dt 2" : "",
          dashed ? fmt::format("head {}, step {}", h, step) : fmt::format("head {} ({})", h, hs[h].value("kind", "?")));
    }
  f.script =
      both_formats(f.name,
                   "  set logscale y\n  set format y '10^{%T}'\n  set yrange [1e-4<*:*<1]\n  set autoscale xfix\n  "
                   "set xlabel 'offset i − j'\n"
                   "  set ylabel 'mean attention'\n  set key outside right\n  set grid\n  plot " +
                       plots + "\n  unset logscale y\n  set format y '%g'\n  set autoscale y\n",
                   1000, 480);
  return f;
}

// At one step, per head: the attention paid on real text by offset (solid) beside the position-only kernel (dashed).
Figure text_offsets(const nlohmann::json& usage, int64_t step) {
  Figure f{"attention_on_text",
           "Attention on real text by offset",
           fmt::format("Layer 0's attention at step {} on {} validation windows (each window's own tokens plus the "
                       "positions), averaged by offset δ = i − j per head (solid), beside the position-only kernel of "
                       "the same head (dashed), log scale. Where the two part, the head reads its tokens, not only "
                       "where they stand.",
                       step, usage["data_attention"].value("windows", 0)),
           {},
           {}};
  std::string plots;
  const size_t n_head = usage["attention_kernels"]["heads"].size();
  for (size_t h = 0; h < n_head; ++h)
    for (const auto& [key, dashed] : {std::pair{"data_attention", false}, std::pair{"attention_kernels", true}}) {
      const nlohmann::json head = head_of(usage, key, h);
      if (head.is_null()) continue;
      const std::string file = fmt::format("{}_head{}.dat", dashed ? "position_only" : "text", h);
      f.data[file] = profile_data(head);
      plots += fmt::format("{}'{}' using 1:2 with lines lw 2 lc {}{} title '{}'", plots.empty() ? "" : ", ", file,
                           h + 1, dashed ? " dt 2" : "",
                           dashed ? fmt::format("head {}, positions only", h)
                                  : fmt::format("head {} on text ({})", h, head["kind"].get<std::string>()));
    }
  f.script =
      both_formats(f.name,
                   "  set logscale y\n  set format y '10^{%T}'\n  set yrange [1e-4<*:*<1]\n  set autoscale xfix\n"
                   "  set xlabel 'offset i − j'\n  set ylabel 'mean attention'\n  set key outside right\n  set grid\n"
                   "  plot " +
                       plots + "\n  unset logscale y\n  set format y '%g'\n  set autoscale y\n",
                   1000, 480);
  return f;
}

Figure kernel_trajectory(const std::vector<std::pair<int64_t, nlohmann::json>>& usage) {
  Figure f{"attention_forming",
           "How the kernels formed",
           "Per head of layer 0, over training: the offset within which half of the position-only attention lies "
           "(median over the second half of the queries), in positions. It starts near the uniform kernel's, falls "
           "as a head turns local or decaying, and rises past it as a head's mass moves towards the first "
           "positions (a sink on the first position at the end, or a kernel still uniform that leans back).",
           {},
           {}};
  const size_t n_head = usage.back().second["attention_kernels"]["heads"].size();
  std::string d = "# step";
  for (size_t h = 0; h < n_head; ++h) d += fmt::format(" head{}", h);
  d += " uniform\n";
  for (const auto& [step, u] : usage) {
    const auto& heads = u["attention_kernels"]["heads"];
    d += std::to_string(step);
    for (size_t h = 0; h < n_head; ++h)
      d += " " + (h < heads.size() ? gp_number(head_number(heads[h], "offset50")) : "NaN");
    d += " " + (heads.empty() ? std::string("NaN") : gp_number(head_number(heads[0], "uniform_offset50"))) + "\n";
  }
  f.data["attention_forming.dat"] = d;
  std::string plots;
  for (size_t h = 0; h < n_head; ++h)
    plots += fmt::format("{}'attention_forming.dat' using 1:{} with linespoints pt 7 ps 0.6 lw 2 title 'head {}'",
                         plots.empty() ? "" : ", ", h + 2, h);
  plots += fmt::format(", 'attention_forming.dat' using 1:{} with lines dt 2 lc rgb 'gray40' title 'uniform kernel'",
                       n_head + 2);
  f.script = both_formats(f.name,
                          "  set xlabel 'training step'\n  set ylabel 'offset holding 50 % of the attention'\n"
                          "  set key outside right\n  set grid\n  set yrange [0:*]\n  plot " +
                              plots + "\n",
                          1000, 440);
  return f;
}

}  // namespace

UsageSection usage_section(const std::string& run_dir, const std::vector<TrajectoryPoint>& points) {
  UsageSection out;
  const RunFolder run(run_dir);
  std::vector<std::pair<int64_t, nlohmann::json>> usage;
  for (const auto& p : points)
    if (auto u = read_snapshot_usage(run, p.step)) usage.emplace_back(p.step, std::move(*u));
  if (usage.empty()) return out;
  const auto& [first_step, first] = usage.front();
  const auto& [last_step, last] = usage.back();
  const auto& pt0 = first["position_token"];
  const auto& pt1 = last["position_token"];
  out.html = fmt::format(
      "<h2>How the model reads its table</h2>\n<p>Layer 0's attention sees the embeddings directly, so its query and "
      "key maps applied to the table alone give the attention each head would pay by position "
      "(docs/analysis.md, “Positional attention kernels”). Each head's kind: <i>local</i> when at least half of "
      "the attention falls on the query itself or its neighbour, <i>sink</i> when at least half of it falls on the "
      "window's first position, <i>uniform</i> when half of it spreads at least 70 % as far as equal weights would, "
      "<i>decaying</i> between. The last columns, where the run measured them, give the kind of the attention "
      "the head pays on real validation windows (tokens and positions together), averaged by offset.</p>\n");
  out.html += heads_table(first, last, first_step, last_step);
  out.html +=
      "<p>Position against token directions (docs/analysis.md, “Position and token subspaces”): the smallest "
      "principal angle between the table's top k components (those above its noise floor; the first one when none "
      "is) and as many of the token "
      "embedding's top directions; the token embedding's variance along the table's directions relative to its "
      "mean per direction; where they sit in the token spectrum (0 top, 0.5 a random direction, 1 bottom); the "
      "largest |cos| between a token row and a position row.</p>\n<div "
      "class=\"wide\"><table>\n<tr><th>step</th><th>k</th>"
      "<th>smallest angle</th><th>token variance ratio</th><th>place in token spectrum</th><th>max |cos|</th></tr>\n" +
      geometry_row(("step " + std::to_string(first_step)).c_str(), pt0) +
      geometry_row(("step " + std::to_string(last_step)).c_str(), pt1) + "</table></div>\n";
  try {
    const auto flat = read_npy_table(run.snapshot_kernels(last_step));
    const int64_t n_head = static_cast<int64_t>(last["attention_kernels"]["heads"].size());
    if (n_head > 0 && flat.size(0) == n_head * flat.size(1))
      out.figures.push_back(kernel_heatmaps(flat, n_head, last_step));
  } catch (const Error&) {
    // the kernels' .npy is missing or damaged: the other figures stand without the heatmaps
  }
  out.figures.push_back(offset_profiles(first, last, first_step, last_step));
  if (last.contains("data_attention")) out.figures.push_back(text_offsets(last, last_step));
  if (usage.size() > 1) out.figures.push_back(kernel_trajectory(usage));
  return out;
}

}  // namespace poslab
