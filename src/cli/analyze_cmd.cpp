#include "cli/analyze_cmd.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include "analysis/agreement.h"
#include "analysis/baselines.h"
#include "analysis/format.h"
#include "analysis/grid.h"
#include "analysis/metric_list.h"
#include "analysis/position_token.h"
#include "analysis/probes.h"
#include "cli/table_options.h"
#include "cli/validators.h"
#include "data/dataset.h"
#include "load/loaded_model.h"
#include "load/model_tables.h"
#include "report/run_ending.h"
#include "run/run_folder.h"
#include "train/evaluate.h"
#include "train/snapshot.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_text.h"
#include "util/output_paths.h"
#include "util/platform.h"
#include "util/wrap.h"

namespace poslab {
namespace fs = std::filesystem;

CLI::App* add_analyze_command(CLI::App& app, AnalyzeArgs& a) {
  auto* cmd = app.add_subcommand("analyze", "analyse a run's, a model's or one position table");
  cmd->footer(
      "What it measures: spectrum and noise floor, effective rank, similarity, smoothness, boundaries, sinusoids, "
      "periods, circles and the helix (docs/analysis.md). A run folder's trajectory and verdict are also written to "
      "RUN_DIR/analysis/.");
  add_table_options(cmd, a.table, a.rows);
  cmd->add_option("--json", a.json, "write every metric as JSON to FILE (- for stdout)")
      ->type_name("FILE")
      ->check(kNotAnOption);
  cmd->add_flag("--force", a.force, "replace an existing --json file");
  cmd->add_flag("--baselines", a.baselines,
                "also analyse random, sinusoidal, handbook and random-walk tables of the same shape");
  cmd->add_flag("--probes", a.probes,
                "one table: also Wang & Chen's probes (5-fold linear regression to the index, "
                "logistic regression on pairs: which comes first), as their paper runs them");
  cmd->add_option("--boundary-rows", a.options.boundary_rows, "rows at each end checked for boundary effects")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--outlier-z", a.options.outlier_z, "|z| that makes a boundary row an outlier")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--top-pcs", a.options.top_pcs, "principal components whose frequency is reported")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--sinusoid-k", a.options.sinusoid_k, "lowest frequencies in the sinusoid R² basis")
      ->capture_default_str()
      ->check(kPositive);
  add_verdict_options(cmd, a.thresholds);
  cmd->add_option(
         "--against", a.against,
         "compare with a second table of the same positions, any width, up to rotation and scale (CKA, Procrustes, "
         "similarity correlation, principal angles): a .npy, .pt, .safetensors or a run folder (its last snapshot)")
      ->type_name("PATH")
      ->check(kNotAnOption);
  cmd->add_option("--against-tensor", a.against_tensor,
                  "tensor name when --against is a .safetensors file (default: --tensor)")
      ->type_name("NAME");
  cmd->add_option("--k", a.k,
                  "with --against: principal angles between the top K components (default: the smaller "
                  "number above the noise floor)")
      ->check(kPositive);
  return cmd;
}

namespace {

// Wang & Chen's two probes in one line. Guessing the middle row scores an MAE of about P/4: a fit worse than that
// says so, and why where the columns are as many as the centred rows it is fitted on (the least-squares fit then
// passes through each of them).
std::string probes_line(const LiteratureProbes& p, int64_t P, int64_t d) {
  const int64_t fitted = P - (P + p.folds - 1) / p.folds;  // the rows of the smallest fold's fit
  const double guess = static_cast<double>(P) / 4;
  const std::string worse = p.absolute_mae <= guess ? ""
                            : d >= fitted - 1
                                ? fmt::format(
                                      ", worse than guessing the middle row ({:.1f}): with {} columns for {} rows, the "
                                      "least-squares fit passes through every row it is fitted on",
                                      guess, d, fitted)
                                : fmt::format(", worse than guessing the middle row ({:.1f})", guess);
  return fmt::format(
      "  Wang & Chen probes (5-fold): absolute MAE {:.2f} positions (rounded predictions{}) | relative accuracy "
      "{:.3f} over {} pairs (a random table scores well above 0.5: compare with it, docs/analysis.md)\n",
      p.absolute_mae, worse, p.relative_accuracy, p.pairs);
}

void emit_json(const AnalyzeArgs& a, const nlohmann::json& j) {
  if (a.json.empty()) return;
  if (a.json == "-") {
    std::cout << json_text(j, 2) << "\n";
  } else {
    write_output_file(a.json, json_text(j, 2) + "\n");
    std::cerr << "wrote " << a.json << "\n";
  }
}

// How a checkpoint's model reads its table (layer 0's position-only kernels, the position/token geometry), beside
// the same numbers for the model as training started it.
nlohmann::json model_usage(const std::string& checkpoint, std::ostream& out) {
  LoadedModel m = load_model(checkpoint);
  if (!m.model->wpe || m.model->h->size() == 0) return nullptr;
  // A run started from another checkpoint (train.init_from) began as that checkpoint's model: gone, the initial column
  // is said to be missing, the rest stands.
  std::error_code ec;
  const std::string& from = m.cfg.train.init_from;
  std::string unknown;  // why the initial column is not measured
  if (!from.empty() && !std::filesystem::exists(from, ec))
    unknown = "train.init_from " + from + ", the checkpoint the run started from, is not there";
  AttentionKernels trained, initial;
  nlohmann::json j = {{"checkpoint", model_usage_json(m.model, m.meta.step, &trained)}};
  std::optional<GPT> start;
  if (unknown.empty()) {
    try {
      start = initial_model(m);
    } catch (const Error& e) {  // the checkpoint it started from, there but not readable
      unknown = "train.init_from: " + std::string(e.what());
    }
  }
  if (start) j["initial"] = model_usage_json(*start, 0, &initial);
  const bool initial_known = unknown.empty();
  j["initial"]["source"] = from.empty() ? "run.seed " + std::to_string(m.cfg.run.seed) : from;
  if (!initial_known) j["initial"]["not_measured"] = unknown;
  const auto& pt = j["checkpoint"]["position_token"];
  const nlohmann::json pt0 = initial_known ? j["initial"]["position_token"] : nlohmann::json();
  // A row of the geometry: the value at the step and at initialisation ("–" where that is unknown)
  auto row = [&](const std::string& what, const char* key, int digits, const char* unit, int index = -1) {
    auto value = [&](const nlohmann::json& g) {
      const nlohmann::json& v = index >= 0 ? g[key][index] : g[key];
      return fmt::format("{:.{}f}", v.get<double>(), digits) + unit;
    };
    return fmt::format("  {:<37}{:>10}{:>16}\n", what, value(pt), initial_known ? value(pt0) : "–");
  };
  out << fmt::format("\nhow the model reads its table (layer 0, {} heads; docs/analysis.md):\n", trained.n_head)
      << fmt::format(" position-only attention kernels at step {} (mean token embedding added):\n", m.meta.step)
      << kernels_text(trained)
      << (initial_known ? " the same at initialisation:\n" + kernels_text(initial)
                        : " the same at initialisation: not measured (" + unknown + ")\n")
      << fmt::format(" {:<38}{:>10}{:>16}\n", "position vs token directions:", fmt::format("step {}", m.meta.step),
                     "initialisation")
      << row(fmt::format("smallest principal angle (top {})", pt["k"].get<int>()), "principal_angles_degrees", 0, "°",
             0)
      << row("token variance along them", "mean_token_variance_ratio", 2, "")
      << row("place in the token spectrum", "mean_token_spectrum_quantile", 2, "")
      << row("max |cos| token row vs position row", "max_abs_cosine", 3, "");
  // The attention the model pays on real validation windows (its corpus must be where its config says).
  try {
    const TokenData data = prepare_tokens(m.cfg, apply_threads(m.cfg.run.threads), &m.tokenizer);
    const int batches = std::min(m.cfg.train.eval_batches, 8);
    const AttentionKernels seen =
        data_attention(m.model, data.val, batches, m.cfg.train.batch_size, eval_seed(m.cfg.run.seed, "val"));
    out << fmt::format(" attention on {} val windows of {} tokens (tokens and positions), averaged by offset:\n",
                       batches * m.cfg.train.batch_size, m.cfg.model.block_size)
        << kernels_text(seen);
    j["data"] = to_json(seen);
    j["data"]["windows"] = batches * m.cfg.train.batch_size;
  } catch (const Error& e) {
    out << " attention on val windows: not measured (" << e.what() << ")\n";
  }
  return j;
}

// poslab analyze A --against B: the two tables' agreement up to rotation and scale.
int run_agreement(const AnalyzeArgs& a, std::ostream& out) {
  std::string a_source, b_source;
  torch::Tensor A = load_table(a.table, a_source);
  TableSource other;
  other.input = a.against;
  other.tensor = a.against_tensor.empty() ? a.table.tensor : a.against_tensor;
  torch::Tensor B;
  try {
    B = load_table(other, b_source);
  } catch (const Error& e) {  // the --against table's tensor is named with --against-tensor (what to pass: first)
    std::string hint = e.hint();
    if (const size_t at = hint.find("--tensor"); at != std::string::npos) hint.replace(at, 8, "--against-tensor");
    throw Error(e.what(), hint);
  }
  if (!a.rows.empty()) {
    A = select_rows(A, a.rows);
    B = select_rows(B, a.rows);
    a_source += " rows " + a.rows;
    b_source += " rows " + a.rows;
  }
  const Agreement g = table_agreement(A, B, a_source, b_source, a.k);
  out << agreement_text(g);
  emit_json(a, to_json(g));
  return 0;
}

// The baselines' columns beside `main`'s, printed as one table; their JSON.
nlohmann::json baselines_table(const AnalyzeArgs& a, std::vector<std::pair<std::string, Analysis>>& columns,
                               const Analysis& main, std::ostream& out, size_t width) {
  nlohmann::json bj;
  for (const Baseline& b : baseline_analyses(main.positions, main.dims, a.options)) {
    bj[b.name] = to_json(b.analysis);
    columns.emplace_back(b.name, b.analysis);
  }
  std::vector<std::pair<std::string, const Analysis*>> view;
  for (const auto& [name, an] : columns) view.emplace_back(name, &an);
  out << "\n" << comparison_table(view, width) << wrap_text(kControlsDrawNote, width) << "\n";
  return bj;
}

// Layer 0 of a GPT-2- or BERT-layout model folder: each head's position-only kernel and the position/token geometry.
nlohmann::json folder_usage(const ModelFolder& m, const ModelTables& t, const ModelTable& table, std::ostream& out) {
  const AttentionKernels k = attention_kernels(layer0_weights(m, t, table));
  const PositionTokenGeometry g = position_token_geometry(token_embedding(m, t), table.rows);
  out << fmt::format("\nhow layer 0 reads the table ({} layout, {} heads, {}; docs/models.md):\n", t.layout, k.n_head,
                     k.causal ? "causal" : "bidirectional: offsets are distances")
      << " position-only attention kernels (mean token embedding added):\n"
      << kernels_text(k) << " position vs token directions:\n"
      << position_token_text(g);
  return {{"layout", t.layout}, {"attention_kernels", to_json(k)}, {"position_token", to_json(g)}};
}

// poslab analyze MODEL (a Hugging Face folder or .safetensors file) with no --tensor: every learned table on its
// positions, and layer 0's reading of it where the layout is known.
int run_model_folder(const AnalyzeArgs& a, std::ostream& out, size_t width) {
  const ModelFolder m = open_model_folder(a.table.input);
  const ModelTables t = find_position_tables(m.config, tensor_shapes(m));
  if (t.unknown) {  // no table and nothing known in its place: the error that names what it holds
    std::string source;
    model_table(a.table.input, "", source);
  }
  out << "model " << a.table.input << ": " << tables_text(t);
  nlohmann::json j = to_json(t);
  j["source"] = a.table.input;
  nlohmann::json tables = nlohmann::json::array();
  for (const PositionTableSpec& s : t.tables)
    if (s.frozen)
      out << fmt::format("{} {}: a fixed sinusoid, not analysed (poslab analyze {} --tensor {} reads it)\n", s.role,
                         s.tensor, a.table.input, s.tensor);
  for (ModelTable& mt : load_model_tables(m, t)) {
    AnalysisOptions opt = a.options;
    torch::Tensor W = mt.rows;
    std::string source = mt.source;
    if (!a.rows.empty()) {
      W = select_rows(W, a.rows, &opt.row_offset);
      source += " positions " + a.rows;
    }
    const Analysis an = analyze_table(W, source, opt);
    out << fmt::format("\n== {} table {} ({} positions x {}) ==\n", mt.spec.role, mt.spec.tensor, W.size(0), W.size(1))
        << summary_text(an);
    nlohmann::json tj = to_json(mt.spec);
    tj["analysis"] = to_json(an);
    if (mt.spec.grid_rows > 0 && a.rows.empty()) {
      const GridAnalysis g = grid_analysis(W, mt.spec.grid_rows, mt.spec.grid_cols, opt.shuffle_seed);
      out << grid_text(g);
      tj["grid_analysis"] = to_json(g);
    }
    if (a.probes) {
      const LiteratureProbes p = literature_probes(W, opt.shuffle_seed);
      out << probes_line(p, W.size(0), W.size(1));
      tj["literature_probes"] = to_json(p);
    }
    if (!t.layout.empty() && a.rows.empty() && mt.spec.role != "vision")
      tj["model_usage"] = folder_usage(m, t, mt, out);
    if (a.baselines) {
      std::vector<std::pair<std::string, Analysis>> columns = {{mt.spec.role, an}};
      tj["baselines"] = baselines_table(a, columns, an, out, width);
    }
    tables.push_back(tj);
  }
  j["analyses"] = tables;
  emit_json(a, j);
  return 0;
}

}  // namespace

int run_analyze(const AnalyzeArgs& a) {
  // With --json -, stdout carries the JSON alone and the summary goes to stderr; either within the terminal's width.
  const int fd = a.json == "-" ? STDERR_FILENO : STDOUT_FILENO;
  const size_t width = terminal_width(fd);
  WrappedLines wrapped(fd == STDERR_FILENO ? std::cerr : std::cout, width);
  std::ostream out(&wrapped);
  if (!a.json.empty()) check_output_file(a.json, "--json", a.force, {a.table.input, a.against});
  check_tensor_option(a.table);
  if (a.against.empty() && !a.against_tensor.empty())
    throw Error("--against-tensor " + a.against_tensor + " applies to --against",
                "pass --against TABLE, or leave it out");
  if (!a.against.empty()) return run_agreement(a, out);
  if (a.k > 0) throw Error("--k applies to --against", "pass --against TABLE, or leave --k out");
  if (a.probes && a.table.synthetic.empty() && !a.table.input.empty() && fs::is_directory(a.table.input) &&
      !is_model_folder(a.table.input))
    throw Error("--probes applies to one table, not to a run folder", "pass one snapshot .npy or a checkpoint");
  std::error_code ec;
  const bool model = a.table.synthetic.empty() && !a.table.input.empty() &&
                     (is_model_folder(a.table.input) || fs::path(a.table.input).extension() == ".safetensors");
  if (model && a.table.tensor.empty()) return run_model_folder(a, out, width);
  const bool run_folder =
      !model && a.table.synthetic.empty() && !a.table.input.empty() && fs::is_directory(a.table.input, ec);

  // The verdict's thresholds judge a run's snapshots; one table gets no verdict (its figures are printed alone).
  const VerdictThresholds defaults;
  for (const auto& [option, given] :
       {std::pair{"--min-signal-share", a.thresholds.min_signal_share != defaults.min_signal_share},
        {"--smooth-z", a.thresholds.smooth_z != defaults.smooth_z}})
    if (given && !run_folder)
      throw Error(std::string(option) + " applies to a run folder's verdict, not to one table (which gets none)",
                  "pass a run folder, or leave " + std::string(option) + " out");

  Analysis main;
  nlohmann::json j;
  std::vector<std::pair<std::string, Analysis>> columns;  // for the comparison table
  std::vector<TrajectoryPoint> points;                    // a run folder's, and its verdict
  Verdict verdict;
  std::optional<Error> unwritten;  // a run folder's analysis files that could not be written
  if (run_folder && !fs::exists(RunFolder(a.table.input).config(), ec) &&
      !fs::exists(RunFolder(a.table.input).snapshot_index(), ec))
    throw Error(a.table.input +
                    ": neither a run folder (no config.yaml, no snapshots/index.jsonl) nor a model folder "
                    "(no config.json)",
                "analyze takes a run folder, a checkpoint .pt, a .npy, a Hugging Face model folder or a .safetensors "
                "file");
  if (run_folder) {
    if (!a.rows.empty())
      throw Error("--rows applies to a single table, not to a run folder", "analyse one snapshot .npy with --rows");
    points = analyze_run(a.table.input, a.options);
    verdict = judge(points, a.thresholds);
    const Verdict& v = verdict;
    main = points.back().analysis;
    const RunFolder run(a.table.input);
    nlohmann::json tj = trajectory_json(points);
    const nlohmann::json vj = verdict_json(v, points);
    // The run's analysis files. One that cannot be written (a read-only copy, a full disk) fails the command, but
    // after the analysis is printed: the work is not lost with the file.
    try {
      make_dirs(run.analysis_dir());
      remove_dead_temporaries(
          run.analysis_dir(),  // an analysis killed mid-write left them
          {fs::path(run.trajectory_csv()).filename().string(), fs::path(run.trajectory_json()).filename().string(),
           fs::path(run.verdict_json()).filename().string()});
      write_file_atomic(run.trajectory_csv(), trajectory_csv(points));
      write_file_atomic(run.trajectory_json(), json_text(tj, 2) + "\n");
      write_file_atomic(run.verdict_json(), json_text(vj, 2) + "\n");
    } catch (const Error& e) {
      unwritten = e;
    }
    j = to_json(main);
    j["trajectory"] = tj;
    j["verdict"] = vj;
    out << fmt::format("run {}: {}\n", a.table.input, snapshot_span(points));
    out << trajectory_tables(points, v.emerged_from, width);
    if (!unwritten) out << "wrote trajectory.csv, trajectory.json and verdict.json to " << run.analysis_dir() << "\n";
    out << "\n";
    out << "last snapshot:\n" << summary_text(main);
    columns.emplace_back("step " + std::to_string(points.front().step), points.front().analysis);
    columns.emplace_back("step " + std::to_string(points.back().step), main);
  } else {
    std::string source;
    torch::Tensor W = load_table(a.table, source);
    AnalysisOptions opt = a.options;
    if (!a.rows.empty()) {
      if (W.dim() != 2)
        throw Error(source + ": --rows needs a 2-D table, got " + c10::str(W.sizes()),
                    "name a 2-D tensor with --tensor");
      W = select_rows(W, a.rows, &opt.row_offset);
    }
    main = analyze_table(W, source, opt);
    // --boundary-rows given past what the table allows (the default, 3, is cut quietly for a small table)
    if (const int64_t most = std::max<int64_t>(0, (W.size(0) - 2) / 4);
        opt.boundary_rows != AnalysisOptions{}.boundary_rows && opt.boundary_rows > most)
      spdlog::warn("--boundary-rows {}: a table of {} rows {} (the interior keeps half the rows at least)",
                   opt.boundary_rows, W.size(0),
                   most > 0 ? fmt::format("is checked at its {} first and last", most) : "has no rows to check");
    // --sinusoid-k past the frequencies the rows hold below their Nyquist, (rows - 1) / 2: the basis takes those
    if (opt.sinusoid_k != AnalysisOptions{}.sinusoid_k && main.sinusoid_k < opt.sinusoid_k)
      spdlog::warn(
          "--sinusoid-k {}: a table of {} rows has {} frequencies below its Nyquist ((rows - 1) / 2); the "
          "basis takes those",
          opt.sinusoid_k, W.size(0), main.sinusoid_k);
    j = to_json(main);
    out << summary_text(main);
    columns.emplace_back("table", main);
    if (a.probes) {
      const LiteratureProbes p = literature_probes(W, opt.shuffle_seed);
      out << probes_line(p, W.size(0), W.size(1));
      j["literature_probes"] = to_json(p);
    }
    if (a.rows.empty() && fs::path(a.table.input).extension() == ".pt")
      j["model_usage"] = model_usage(a.table.input, out);
  }

  const bool with_baselines = a.baselines || run_folder;
  if (with_baselines) j["baselines"] = baselines_table(a, columns, main, out, width);
  out << fmt::format("\nanalysed in {:.1f} ms ({} x {})\n", 1000 * main.seconds, main.positions, main.dims);
  if (run_folder) out << run_ending_text(a.table.input, points, verdict, terminal_takes_unicode());
  emit_json(a, j);
  if (unwritten) {
    out.flush();
    std::cout.flush();
    const std::string dir = RunFolder(a.table.input).analysis_dir();
    throw Error(std::string(unwritten->what()) + " (the analysis is printed above; its files in " + dir +
                    " are not all written)",
                "to keep them, make " + dir +
                    " writable (or free the disk), or analyse a copy of the run folder "
                    "where you may write");
  }
  return 0;
}

}  // namespace poslab
