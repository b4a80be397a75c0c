#include "cli/commands.h"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <iostream>

#include "cli/analyze_cmd.h"
#include "cli/model_cmds.h"
#include "config/config.h"
#include "train/trainer.h"

namespace poslab {

int run_cli(int argc, char** argv) {
  CLI::App app{"poslab: train a small GPT with a learned position table and watch the table take shape"};
  app.require_subcommand(1);

  TrainRequest train_req;
  auto* train_cmd = app.add_subcommand("train", "train a model from a YAML config (or resume a run)");
  train_cmd->add_option("config", train_req.config_path, "YAML config; keys not listed keep their defaults")
      ->check(CLI::ExistingFile);
  train_cmd->add_option("--set", train_req.overrides, "override one key, e.g. --set train.max_steps=50 (repeatable)")
      ->take_all();
  train_cmd->add_option("--resume", train_req.resume_dir, "continue RUN_DIR from its checkpoints/latest.pt")
      ->check(CLI::ExistingDirectory);
  train_cmd->add_option("--stop-at", train_req.stop_at,
                        "stop at this step with a checkpoint, as if interrupted; continue later with --resume");

  auto* config_cmd = app.add_subcommand("config", "print the effective config (defaults + file + --set) as YAML");
  std::string config_path;
  std::vector<std::string> config_sets;
  config_cmd->add_option("config", config_path, "YAML config")->check(CLI::ExistingFile);
  config_cmd->add_option("--set", config_sets, "override one key (repeatable)")->take_all();

  AnalyzeArgs analyze_args;
  auto* analyze_cmd = add_analyze_command(app, analyze_args);
  ReportArgs report_args;
  auto* report_cmd = add_report_command(app, report_args);
  InspectArgs inspect_args;
  auto* inspect_cmd = add_inspect_command(app, inspect_args);
  SampleArgs sample_args;
  auto* sample_cmd = add_sample_command(app, sample_args);
  EvalArgs eval_args;
  auto* eval_cmd = add_eval_command(app, eval_args);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << "\n" << "hint: see poslab --help, or poslab SUBCOMMAND --help\n";
    return 2;
  }

  if (*train_cmd) {
    if (!train_req.resume_dir.empty() && !train_req.config_path.empty())
      throw CLI::ValidationError("train", "give a config or --resume RUN_DIR, not both (a run keeps its config)");
    const TrainSummary s = train(train_req);
    std::cout << s.run_dir << "\n";
    if (!s.report_html.empty()) std::cout << s.report_html << "\n";
    return 0;
  }
  if (*analyze_cmd) return run_analyze(analyze_args);
  if (*report_cmd) return run_report(report_args);
  if (*inspect_cmd) return run_inspect(inspect_args);
  if (*sample_cmd) return run_sample(sample_args);
  if (*eval_cmd) return run_eval(eval_args);
  if (*config_cmd) {
    std::cout << to_yaml(load_config(config_path, config_sets));
    return 0;
  }
  return 1;
}

}  // namespace poslab
