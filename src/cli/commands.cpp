#include "cli/commands.h"

#include <CLI/CLI.hpp>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>
#include <vector>

#include "bench/bench.h"
#include "cli/analyze_cmd.h"
#include "cli/export_cmd.h"
#include "cli/help_format.h"
#include "cli/model_cmds.h"
#include "cli/parse_errors.h"
#include "cli/report_cmd.h"
#include "cli/sweep_cmds.h"
#include "cli/validators.h"
#include "config/config.h"
#include "distributed/comm.h"
#include "distributed/env.h"
#include "distributed/launcher.h"
#include "report/report.h"
#include "report/run_ending.h"
#include "train/run_setup.h"
#include "train/schedule.h"
#include "train/trainer.h"
#include "tune/autotune_search.h"
#include "tune/kernel_cache.h"
#include "util/cuda.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_text.h"
#include "util/kernel_paths.h"
#include "util/log.h"
#include "util/output_paths.h"
#include "util/platform.h"
#include "util/plural.h"
#include "util/shell.h"
#include "util/signals.h"
#include "util/version.h"
#include "util/wrap.h"

namespace poslab {

namespace {

struct TrainArgs {
  TrainRequest req;
  std::vector<std::string> sets;  // --set: req.overrides, from "--set"
  int nproc = 1;                  // --nproc: worker processes on this machine
};
struct ConfigArgs {
  std::string path;
  std::vector<std::string> sets;
};
struct BenchArgs {
  std::string config, json;  // json: FILE or "-"
  std::vector<std::string> sets;
  BenchOptions options;
  bool force = false;  // replace an existing --json or --profile file, write into an --export folder that holds files
};

CLI::App* add_train_command(CLI::App& app, TrainArgs& a) {
  auto* cmd = app.add_subcommand("train", "train a model from a YAML config, or resume a run");
  cmd->add_option("config", a.req.config_path,
                  "YAML config (keys it leaves out keep their defaults); needed without --resume or --init-from")
      ->check(existing("file"));
  cmd->add_option("--set", a.sets, "override one key, e.g. --set train.max_steps=50 (repeatable)")
      ->type_name("KEY=VALUE")
      ->take_all();
  cmd->add_option("--resume", a.req.resume_dir, "continue RUN_DIR from its checkpoints/latest.pt")
      ->check(existing("folder"));
  cmd->add_option("--init-from", a.req.init_from,
                  "start a new run from this checkpoint's weights (not its optimizer, step or sampler); "
                  "without a config, from its config too (e.g. a checkpoint of poslab extend); a run folder: its "
                  "latest.pt")
      ->type_name("CHECKPOINT")
      ->transform(kRunFolderToCheckpoint);
  cmd->add_option("--stop-at", a.req.stop_at,
                  "stop at this step with a checkpoint, as if interrupted; continue later with --resume")
      ->check(kNonNegative);
  cmd->add_option("--nproc", a.nproc,
                  "train data-parallel on N processes of this machine (each with its share of the cores); "
                  "torchrun and srun launch many machines")
      ->check(kPositive);
  return cmd;
}

CLI::App* add_config_command(CLI::App& app, ConfigArgs& a) {
  auto* cmd = app.add_subcommand("config", "print the effective config as YAML");
  cmd->add_option("config", a.path,
                  "YAML config (keys it leaves out keep their defaults); without one, poslab's built-in defaults, "
                  "which are not configs/default.yaml's")
      ->check(existing("file"));
  cmd->add_option("--set", a.sets, "override one key (repeatable)")->type_name("KEY=VALUE")->take_all();
  return cmd;
}

CLI::App* add_bench_command(CLI::App& app, BenchArgs& a) {
  auto* cmd = app.add_subcommand("bench", "a config's training speed: tokens/s, MFU");
  cmd->add_option("config", a.config,
                  "YAML config (keys it leaves out keep their defaults); without one, poslab's built-in defaults, "
                  "which are not configs/default.yaml's")
      ->check(existing("file"));
  cmd->add_option("--set", a.sets, "override one key (repeatable)")->type_name("KEY=VALUE")->take_all();
  cmd->add_option("--steps", a.options.steps, "timed steps")->capture_default_str()->check(kPositive);
  cmd->add_option("--warmup", a.options.warmup, "untimed steps first")->capture_default_str()->check(kNonNegative);
  cmd->add_option("--json", a.json, "write the figures as JSON to FILE (- for stdout)")
      ->type_name("FILE")
      ->check(kNotAnOption);
  cmd->add_option("--export", a.options.export_dir,
                  "write initial weights, batches and losses to DIR for scripts/torch_reference.py (a new folder, "
                  "or one that holds files with --force)")
      ->type_name("DIR")
      ->check(kNotAnOption);
  cmd->add_option("--profile", a.options.profile_path,
                  "profile the timed steps into FILE (Chrome trace; scripts/profile_table.py FILE sums it by op)")
      ->type_name("FILE")
      ->check(kNotAnOption);
  cmd->add_flag("--force", a.force,
                "replace an existing --json or --profile file; write into an --export folder that holds files");
  return cmd;
}

// poslab train --nproc N: checks what all workers would reject (once, here), then starts and watches them.
int launch_train(const TrainRequest& req, int nproc, int argc, char** argv) {
  if (read_dist_env().distributed())
    throw Error(
        "--nproc " + std::to_string(nproc) + " inside a process that a launcher already started (WORLD_SIZE is set)",
        "leave out --nproc under torchrun or srun: they start the processes");
  const Config cfg = train_config(req);
  check_divides("train.batch_size", cfg.train.batch_size, nproc, origin_prefix(cfg, "train.batch_size"));
  check_kernels_env();
  LocalLaunch launch;
  launch.nproc = nproc;
  launch.argv = without_nproc(std::vector<std::string>(argv, argv + argc));
  launch.grace_s = cfg.run.dist_timeout_s;
  return launch_local(launch);
}

// poslab train: one process, a worker of a launcher, or the launcher of --nproc workers.
int run_train(const TrainArgs& a, int argc, char** argv) {
  TrainRequest req = a.req;
  req.overrides = command_line_sets(a.sets);
  if (!req.resume_dir.empty() && !req.config_path.empty())
    throw Error("train: give a config or --resume RUN_DIR, not both (a run keeps its config)",
                "poslab train --resume " + shell_word(req.resume_dir) +
                    " goes on with the run's own config; change a key with --set KEY=VALUE");
  if (!req.resume_dir.empty() && !req.init_from.empty())
    throw Error(
        "train: give --init-from CHECKPOINT or --resume RUN_DIR, not both (a resumed run continues from its "
        "own checkpoint)",
        "--resume goes on with a run; --init-from starts a new one from a checkpoint's weights");
  if (req.config_path.empty() && req.resume_dir.empty() && req.init_from.empty())
    throw Error("train: name a config, --resume RUN_DIR or --init-from CHECKPOINT",
                "poslab train configs/default.yaml trains the default model; configs/ holds the others, and "
                "poslab help train lists the options");
  if (a.nproc > 1) return launch_train(req, a.nproc, argc, argv);
  const DistEnv env = read_dist_env();
  if (env.rank != 0) {  // the others say only what goes wrong, and which rank they are
    spdlog::set_level(spdlog::level::warn);
    set_log_pattern(fmt::format("%H:%M:%S [{}] %^%l%$ %v", rank_label(env)));
  }
  install_stop_handlers();
  if (env.rank == 0 && !req.config_path.empty()) {  // a config file that sets nothing: poslab's whole default job
    const Config file = load_config(req.config_path);
    const bool sets_any =
        std::any_of(file.origin.begin(), file.origin.end(), [&](const auto& o) { return o.second == req.config_path; });
    if (!sets_any)
      spdlog::warn(
          "{}: sets no key (an empty file, or comments only): every key but those of --set keeps poslab's "
          "built-in default (poslab config {} prints them)",
          req.config_path, shell_word(req.config_path));
  }
  TrainSummary s = train(req);
  if (s.report_due) s.report_html = write_report_of_finished_run(s.run_dir);
  if (env.rank != 0)
    return s.interrupted_by != 0 ? 128 + s.interrupted_by : stop_signal() != 0 ? 128 + stop_signal() : 0;
  // Ctrl-C while the report was drawn (its gnuplot, in the terminal's process group, stopped with it): the training
  // is done, the report left unwritten, which the resume of the finished run writes.
  if (s.report_due && s.interrupted_by == 0 && stop_signal() != 0) {
    std::cout << s.run_dir << "\n";
    std::cerr << "interrupted while the report was written; the training is done and its checkpoint written. Write "
                 "the report with:\n  poslab train --resume "
              << shell_word(s.run_dir) << "\n";
    return 128 + stop_signal();
  }
  if (s.interrupted_by == 0)  // what the run found, where to look
    std::cerr << wrap_lines(run_ending_of(s.run_dir), terminal_width(STDERR_FILENO));
  std::cout << s.run_dir << "\n";
  if (!s.report_html.empty()) std::cout << s.report_html << "\n";
  if (s.interrupted_by != 0) {
    std::cerr << "interrupted at step " << s.steps << "; the checkpoint and snapshot are written. Resume with:\n"
              << "  poslab train --resume " << shell_word(s.run_dir) << "\n";
    return 128 + s.interrupted_by;
  }
  return 0;
}

// poslab bench: the figures on one line and the kernel paths' timings (on stderr when the JSON goes to stdout).
// bench's outputs apart: --json and --profile not one file (the second written would replace the first), neither in
// the --export folder (whose files of the same names would replace it, or be replaced by it), and the trace a file,
// not stdout.
void check_bench_outputs_apart(const BenchArgs& a) {
  const std::string& profile = a.options.profile_path;
  if (profile == "-")
    throw Error("--profile -: the trace is a file (Chrome's JSON trace format), not the standard output",
                "name a file, e.g. --profile bench_trace.json");
  if (!a.json.empty() && a.json != "-" && !profile.empty() && real_place(a.json) == real_place(profile))
    throw Error("--json " + a.json + " and --profile " + profile + ": one file for two outputs",
                "name two files (or leave one of them out)");
  if (a.options.export_dir.empty()) return;
  for (const auto& [option, path] : {std::pair<std::string, std::string>{"--json", a.json}, {"--profile", profile}})
    if (!path.empty() && path != "-" && lies_within(path, a.options.export_dir))
      throw Error(option + " " + path + ": is in the --export folder " + a.options.export_dir +
                      ", which the export fills with files of its own",
                  "name a file outside it");
}

int run_bench_command(const BenchArgs& a) {
  check_bench_outputs_apart(a);
  const Config cfg = load_config(a.config, command_line_sets(a.sets));
  check_output_file(a.json, "--json", a.force, {a.config}, cfg.data.corpus);
  check_output_file(a.options.profile_path, "--profile", a.force, {a.config}, cfg.data.corpus);
  check_output_folder(a.options.export_dir, "--export", a.force, "", cfg.data.corpus);
  const nlohmann::json j = run_bench(cfg, a.options);
  // With --json -, stdout carries the JSON alone and the figures go to stderr; either within the terminal's width.
  const int fd = a.json == "-" ? STDERR_FILENO : STDOUT_FILENO;
  WrappedLines wrapped(fd == STDERR_FILENO ? std::cerr : std::cout, terminal_width(fd));
  std::ostream out(&wrapped);
  const std::string gpu = j["gpu"].get<std::string>();
  out << fmt::format("{}{}{} | ", j["device"].get<std::string>(), gpu.empty() ? "" : " " + gpu,
                     j["cuda_graph"].get<bool>() ? " (the step as a CUDA graph)" : "");
  out << fmt::format(
      "{} ({} warm-up) | {:.1f} ms/step | {:.0f} tok/s | model {:.2f} GFLOP/step = {:.1f} GFLOP/s | "
      "matmul {:.0f} GFLOP/s ({}) | {} | {}\n",
      counted(j["steps"].get<int>(), "step"), j["warmup"].get<int>(), j["ms_per_step"].get<double>(),
      j["tokens_per_s"].get<double>(), j["model_gflop_per_step"].get<double>(), j["achieved_gflops"].get<double>(),
      j["matmul_gflops"].get<double>(), j["config"]["dtype"].get<std::string>(), mfu_words(j["mfu"].get<double>()),
      j["config"]["position"] != "none"
          ? fmt::format("table analysis {:.1f} ms = {:.2f}% of a step (a snapshot also reads layer 0's attention)",
                        j["snapshot_analysis_ms"].get<double>(), 100 * j["snapshot_share_of_step"].get<double>())
          : "no position table, no snapshot analysis");
  const auto& k = j["kernel_paths"];
  // The chosen paths on a line of their own: one word, too long to share a line of 80 columns.
  const std::string dtype = j["config"]["dtype"].get<std::string>();
  const KernelPaths chosen = parse_kernel_paths(k["chosen"].get<std::string>(), kernel_paths(), "kernel_paths.chosen");
  out << fmt::format("kernel paths ({}):\n  {}\n", k["how"].get<std::string>(), to_string_in_use(chosen, dtype));
  if (k.contains("sdpa_kernel"))
    out << "  attention: scaled_dot_product_attention's " << k["sdpa_kernel"].get<std::string>() << " kernel\n";
  // The candidates timed, as training logs them (tune/autotune_search.h).
  KernelTuning tuning;
  tuning.chosen = chosen;
  tuning.timings = timings_from_json(k["timings"], "kernel_paths.timings");
  if (!tuning.timings.empty()) out << "kernel paths, ms per forward + backward:\n" << tuning_text(tuning, dtype);
  if (a.json == "-")
    std::cout << json_text(j, 2) << "\n";
  else if (!a.json.empty())
    write_output_file(a.json, json_text(j, 2) + "\n");
  return 0;
}

int run_config(const ConfigArgs& a) {
  const Config cfg = load_config(a.path, command_line_sets(a.sets));
  validate_new_run(cfg);  // what train would refuse for a new run, config refuses too
  try {  // the corpus and train.init_from: said, the config still shown (a run's config.yaml, its corpus since moved)
    check_config_paths(cfg);
  } catch (const Error& e) {
    spdlog::warn("{} ({}); poslab train would stop there", e.what(), e.hint());
  }
  // and what it would warn of, config says too
  if (const std::string w = schedule_warning(cfg.train); !w.empty()) spdlog::warn("{}", w);
  for (const std::string& w : unread_settings(cfg)) spdlog::warn("{}", w);
  std::cout << to_yaml(cfg);
  return 0;
}

// Parses the command line; an exit code when that ends the program (--help, --version, a parse error).
std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return report_parse_error(app, e);
  }
  return std::nullopt;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"poslab: a small GPT whose learned position table you watch take shape"};
  app.require_subcommand(1);
  app.formatter(std::make_shared<HelpFormatter>());  // before the subcommands, which take their parent's
  // A callback: the summary looks for a GPU, which only --version should pay for.
  app.set_version_flag("--version", std::function<std::string()>([] {
                         return poslab_version() + "\nbuilt with " + build_summary() + "\nBLAS: " + blas_summary();
                       }));

  // The subcommands in the order of poslab --help.
  TrainArgs train_args;
  auto* train_cmd = add_train_command(app, train_args);
  ConfigArgs config_args;
  auto* config_cmd = add_config_command(app, config_args);
  BenchArgs bench_args;
  auto* bench_cmd = add_bench_command(app, bench_args);
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
  ExtendArgs extend_args;
  auto* extend_cmd = add_extend_command(app, extend_args);
  ExportArgs export_args;
  auto* export_cmd = add_export_command(app, export_args);
  SweepArgs sweep_args;
  auto* sweep_cmd = add_sweep_command(app, sweep_args);
  CompareArgs compare_args;
  auto* compare_cmd = add_compare_command(app, compare_args);

  // Set after the subcommands, which would inherit it.
  app.footer(
      "poslab help COMMAND (or poslab COMMAND --help): a command's options.\n"
      "docs/cli.md: every command, option and config key.");
  // "poslab help" and "poslab help train" are "poslab --help" and "poslab train --help".
  std::vector<char*> help_args;
  if (argc > 1 && std::string(argv[1]) == "help") {
    static char help_flag[] = "--help";
    if (argc > 3) {  // the words after the command would be read as its arguments, and checked
      std::cerr << "error: poslab help: one command at most, not '" << argv[3] << "' after " << argv[2]
                << "\nhint: poslab help " << argv[2] << " lists its options\n";
      return 2;
    }
    help_args.push_back(argv[0]);
    if (argc == 3 && std::string(argv[2]) != "help") help_args.push_back(argv[2]);  // "poslab help help": poslab help
    help_args.push_back(help_flag);
    argc = static_cast<int>(help_args.size());
    argv = help_args.data();
  }
  // "poslab frob": CLI11 would say only that a subcommand is required.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
      known = known || sub->get_name() == argv[1];
    }
    if (!known) {
      std::cerr << "error: unknown command '" << argv[1] << "'\nhint: the commands are " << names
                << "; poslab help says what each does\n";
      return 2;
    }
  }
  if (const std::optional<int> code = parse(app, argc, argv)) return *code;
  if (*train_cmd) return run_train(train_args, argc, argv);
  if (*bench_cmd) return run_bench_command(bench_args);
  if (*analyze_cmd) return run_analyze(analyze_args);
  if (*report_cmd) return run_report(report_args);
  if (*inspect_cmd) return run_inspect(inspect_args);
  if (*sample_cmd) return run_sample(sample_args);
  if (*eval_cmd) return run_eval(eval_args);
  if (*extend_cmd) return run_extend(extend_args);
  if (*export_cmd) return run_export(export_args);
  if (*sweep_cmd) return run_sweep_command(sweep_args);
  if (*compare_cmd) return run_compare(compare_args);
  if (*config_cmd) return run_config(config_args);
  return 1;
}

}  // namespace poslab
