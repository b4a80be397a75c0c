#include "cli/report_cmd.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>

#include "cli/table_options.h"
#include "cli/validators.h"
#include "load/model_tables.h"
#include "report/report.h"
#include "run/run_files.h"
#include "run/run_folder.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/output_paths.h"

namespace poslab {
namespace fs = std::filesystem;

CLI::App* add_report_command(CLI::App& app, ReportArgs& a) {
  auto* cmd = app.add_subcommand("report", "an HTML page of figures: a run, a table, a model");
  cmd->footer(
      "Draws the analysis with gnuplot: a run folder, one table (.npy, .safetensors, .pt, --synthetic), or a model "
      "folder's tables; a run's page comes with watch.html, which plays the table forming.");
  add_table_options(cmd, a.table, a.rows);
  cmd->add_option("--out", a.out,
                  "one table: the report folder (default: INPUT's name + '_report' beside it; for a run's own "
                  "snapshot or checkpoint, in the run's analysis/)")
      ->type_name("DIR")
      ->check(kNotAnOption);
  cmd->add_flag("--force", a.force,
                "write into a folder that holds files other than poslab's earlier report, replacing those of the "
                "same name");
  add_verdict_options(cmd, a.thresholds);
  return cmd;
}

int run_report(const ReportArgs& a) {
  check_tensor_option(a.table);
  std::error_code ec;
  ReportResult r;
  const TableSource& t = a.table;
  const bool model = t.synthetic.empty() && !t.input.empty() &&
                     (is_model_folder(t.input) || fs::path(t.input).extension() == ".safetensors");
  if (model && t.tensor.empty() && a.rows.empty()) {
    // A model's learned tables, each on its positions: one report, or one per table in OUT/ROLE.
    const ModelFolder m = open_model_folder(t.input);
    const std::vector<ModelTable> tables = load_model_tables(m, find_position_tables(m.config, tensor_shapes(m)));
    std::string source;
    if (tables.size() < 2) model_table(t.input, "", source);  // none: the error that says why
    const fs::path in = fs::path(t.input).filename().empty() ? fs::path(t.input).parent_path() : fs::path(t.input);
    const fs::path base = a.out.empty() ? in.parent_path() / (in.stem().string() + "_report") : fs::path(a.out);
    const std::string named = a.out.empty() ? "the report folder" : "--out";
    for (const ModelTable& mt : tables)
      check_report_folder(tables.size() == 1 ? base.string() : (base / mt.spec.role).string(), named, a.force);
    for (const ModelTable& mt : tables) {
      const std::string dir = tables.size() == 1 ? base.string() : (base / mt.spec.role).string();
      r = write_table_report(mt.rows, mt.source, dir, 0, mt.spec.grid_rows, mt.spec.grid_cols);
      if (tables.size() > 1) std::cout << r.index_html << "\n";
    }
    if (tables.size() > 1) return 0;
  } else if (!model && t.synthetic.empty() && !t.input.empty() && fs::is_directory(t.input, ec)) {
    if (!a.out.empty())
      throw Error("--out " + a.out + ": a run's report is written inside it, to " + RunFolder(t.input).report_dir(),
                  "leave --out out (it names the folder of one table's or a model's report)");
    if (!a.rows.empty())
      throw Error("--rows applies to a single table, not to a run folder", "report one snapshot .npy with --rows");
    r = write_run_report(t.input, a.thresholds);
  } else {
    std::string source;
    torch::Tensor W = load_table(t, source);
    std::string out = a.out;
    if (out.empty() && t.input.empty()) out = "report_" + t.synthetic;
    if (out.empty()) {  // beside the table; for a run's own snapshot or checkpoint, in the run's analysis/ folder
      const fs::path in(t.input);
      const std::string run = run_record_of(in.parent_path().empty() ? "." : in.parent_path().string());
      out = ((run.empty() ? in.parent_path() : fs::path(RunFolder(run).analysis_dir())) /
             (in.stem().string() + "_report"))
                .string();
    }
    check_report_folder(out, a.out.empty() ? "the report folder" : "--out", a.force);
    int64_t offset = 0;
    if (!a.rows.empty()) W = select_rows(W, a.rows, &offset);
    // A report that fails part way (gnuplot, the disk) takes the folder it made away again.
    r = writing_into(out, [&] { return write_table_report(W, source, out, offset); });
  }
  spdlog::info("{} figures (PNG and SVG) with their data and gnuplot scripts", r.figures.size());
  std::cout << r.index_html << "\n";
  return 0;
}

}  // namespace poslab
