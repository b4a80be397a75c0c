#include "cli/sweep_cmds.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>
#include <map>

#include "cli/validators.h"
#include "load/model_tables.h"
#include "load/table_source.h"
#include "report/compare.h"
#include "report/report.h"
#include "report/table_atlas.h"
#include "run/run_files.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/output_paths.h"
#include "util/shell.h"
#include "util/signals.h"

namespace poslab {
namespace fs = std::filesystem;

CLI::App* add_sweep_command(CLI::App& app, SweepArgs& a) {
  auto* cmd = app.add_subcommand("sweep", "train every variant × seed of a sweep file");
  cmd->footer("One run after another; run it again to resume (docs/cli.md, \"Sweeps, seeds and comparisons\").");
  cmd->add_option("file", a.file, "sweep YAML (see configs/sweeps/)")->required()->check(existing("file"));
  cmd->add_option("--set", a.options.sets, "override one key in every run, e.g. --set train.max_steps=100 (repeatable)")
      ->type_name("KEY=VALUE")
      ->take_all();
  cmd->add_option("--max-runs", a.options.max_runs, "train at most N runs now (finished runs do not count)")
      ->check(kPositive);
  cmd->add_option("--stop-at", a.options.stop_at,
                  "stop the run being trained at this step with a checkpoint, and the sweep with it (a run already "
                  "there is left as it is)")
      ->check(kNonNegative);
  return cmd;
}

CLI::App* add_compare_command(CLI::App& app, CompareArgs& a) {
  auto* cmd = app.add_subcommand("compare", "one page comparing runs (seeds pooled) or tables");
  cmd->footer(
      "Runs: by variant, seeds pooled as mean ± sd, with a page per variant playing its seeds side by side. Tables: "
      "position tables of any widths (model folders, .safetensors, .npy, .pt) on one page.");
  cmd->add_option("inputs", a.dirs,
                  "run folders and/or sweep folders; or tables: model folders, .safetensors, .npy, .pt")
      ->required()
      ->check(existing("path"));
  cmd->add_option("--out", a.out, "output folder (default: SWEEP_DIR/compare for one sweep, else ./compare)")
      ->type_name("DIR")
      ->check(kNotAnOption);
  cmd->add_flag("--force", a.force,
                "write into a folder that holds files other than poslab's earlier page, replacing those of the same "
                "name");
  return cmd;
}

int run_sweep_command(const SweepArgs& a) {
  install_stop_handlers();
  const SweepSummary s = run_sweep(a.file, a.options);
  std::cout << s.dir << "\n";
  if (s.interrupted_by != 0) {
    std::cerr << "interrupted; the run's checkpoint is written. Go on with:\n  poslab sweep " << shell_word(a.file);
    for (const std::string& s : a.options.sets) std::cerr << " --set " << shell_word(s);  // the runs trained with them
    std::cerr << "\n";
    return 128 + s.interrupted_by;
  }
  if (s.finished == s.runs)
    std::cerr << "every run is finished; compare them with:\n  poslab compare " << shell_word(s.dir) << "\n";
  return 0;
}

namespace {

// A run or sweep folder, as opposed to a table: a folder that is not a model's.
bool is_run_input(const std::string& path) { return fs::is_directory(path) && !is_model_folder(path); }

// poslab compare TABLE TABLE …: every learned table of each input (a model folder's each on its own), on one page.
int compare_tables(const CompareArgs& a) {
  check_report_folder(a.out.empty() ? "compare" : a.out, a.out.empty() ? "the comparison's folder" : "--out", a.force,
                      "compare");
  std::vector<NamedTable> tables;
  GivenOnce given("compare", "name each table once");  // a table given twice would be drawn twice
  for (const std::string& input : a.dirs) {
    given.add(input, input);
    const fs::path p = fs::path(input).filename().empty() ? fs::path(input).parent_path() : fs::path(input);
    const std::string name = p.extension() == ".safetensors" || p.extension() == ".npy" || p.extension() == ".pt"
                                 ? (p.parent_path().filename() / p.stem()).string()
                                 : p.filename().string();
    if (is_model_folder(input) || p.extension() == ".safetensors") {
      const ModelFolder m = open_model_folder(input);
      const ModelTables t = find_position_tables(m.config, tensor_shapes(m));
      const std::vector<ModelTable> found = load_model_tables(m, t);
      if (found.empty()) {
        std::string source;
        model_table(input, "", source);  // the error that says why
      }
      for (const ModelTable& mt : found)
        tables.push_back({found.size() == 1 ? name : name + " " + mt.spec.role, mt.source, mt.rows, mt.spec.grid_rows,
                          mt.spec.grid_cols});
    } else {
      TableSource ts;
      ts.input = input;
      NamedTable nt{name, "", {}};
      nt.rows = load_table(ts, nt.source);
      tables.push_back(nt);
    }
  }
  // A table refused while the page is drawn (one that holds NaN) takes the folder the comparison made away again.
  const std::string out = a.out.empty() ? "compare" : a.out;
  const std::string page = writing_into(out, [&] { return write_table_atlas(tables, out); });
  for (const auto& t : tables) spdlog::info("{}: {} positions x {}", t.label, t.rows.size(0), t.rows.size(1));
  std::cout << page << "\n";
  return 0;
}

}  // namespace

int run_compare(const CompareArgs& a) {
  size_t runs = 0;
  for (const std::string& d : a.dirs) runs += is_run_input(d);
  if (runs == 0) return compare_tables(a);
  if (runs != a.dirs.size()) {
    for (const std::string& d : a.dirs) {  // an input that is neither: named as such
      const std::string ext = fs::path(d).extension().string();
      if (!is_run_input(d) && !is_model_folder(d) && ext != ".npy" && ext != ".pt" && ext != ".safetensors")
        throw Error("compare: " + d + ": neither a run or sweep folder nor a table",
                    "compare takes run and sweep folders, or tables (.npy, .pt, .safetensors, a model folder)");
    }
    throw Error("compare: give run and sweep folders, or tables, not both",
                "compare a run's table with others through its snapshot: RUN/snapshots/wpe_stepNNNNNN.npy");
  }
  std::string out = a.out;
  if (out.empty()) {
    out = a.dirs.size() == 1 && is_sweep_dir(a.dirs[0]) ? sweep_compare_dir(a.dirs[0]) : "compare";
  }
  check_report_folder(out, a.out.empty() ? "the comparison's folder" : "--out", a.force, "compare");
  const Comparison c = compare_runs(a.dirs);
  // " (from step 433 ± 58)": the mean step over the runs where it happened
  auto from_step = [](const Stat& s) {
    if (s.n == 0) return std::string();
    return fmt::format(" (from step {:.0f}{})", s.mean, s.n > 1 ? fmt::format(" ± {:.0f}", s.sd) : "");
  };
  for (const auto& row : c.rows) {
    std::string line =
        row.variant + " (" + std::to_string(row.runs.size()) + " run" + (row.runs.size() == 1 ? "" : "s") + ")";
    for (size_t k = 0; k < row.keys.size() && k < 2; ++k)  // val_loss, train_loss: in words, as the page names them
      line += fmt::format(" | {} {:.4f}{}", comparison_column_names(row.keys[k]).first, row.stats[k].mean,
                          row.stats[k].n > 1 ? fmt::format(" ± {:.4f}", row.stats[k].sd) : "");
    if (row.judged > 0)
      line += fmt::format(" | emerged {} of {}{} | a circle in {} of {}{}", row.emerged, row.judged,
                          from_step(row.emerged_from), row.circled, row.judged, from_step(row.circle_from));
    for (const AgreementCell& cell : c.agreement)
      if (cell.a == row.variant && cell.b == row.variant)
        // beside what two independent random tables of the shape give: agreement is CKA well above it
        line += fmt::format(" | seeds' CKA {:.3f}{} ({} pair{}; random tables {:.2f})", cell.cka.mean,
                            cell.cka.n > 1 ? fmt::format(" ± {:.3f}", cell.cka.sd) : "", cell.pairs,
                            cell.pairs == 1 ? "" : "s", cell.cka_random);
    spdlog::info("{}", line);
  }
  std::cout << writing_into(out, [&] { return write_comparison(c, out); }) << "\n";
  return 0;
}

}  // namespace poslab
