#include "cli/table_options.h"

#include <filesystem>

#include "cli/validators.h"
#include "hf/model_folder.h"
#include "util/error.h"

namespace poslab {
namespace fs = std::filesystem;

void add_table_options(CLI::App* cmd, TableSource& t, std::string& rows) {
  cmd->add_option("input", t.input,
                  "a run folder, a checkpoint .pt, a .npy, a .safetensors file or a Hugging Face model "
                  "folder (every table its family keeps: docs/models.md)")
      ->type_name("PATH")
      ->check(kNotAnOption);
  cmd->add_option("--tensor", t.tensor,
                  "one tensor of a .safetensors file or model folder, e.g. transformer.wpe.weight")
      ->type_name("NAME");
  cmd->add_option("--synthetic", t.synthetic, "use a generated table instead: random | sinusoidal | handbook | walk")
      ->type_name("KIND");
  cmd->add_option("--positions", t.positions, "rows of the synthetic table")->capture_default_str()->check(kPositive);
  cmd->add_option("--dim", t.dims, "columns of the synthetic table")->capture_default_str()->check(kPositive);
  cmd->add_option("--seed", t.seed,
                  "seed of a synthetic random, handbook or walk table; the baselines always use seed 0")
      ->capture_default_str()
      ->check(kSeed);
  cmd->add_option("--std", t.std, "std of a synthetic random table (of a walk's steps); the baselines always use 0.02")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--rows", rows,
                  std::string("rows BEGIN:END of the table only (half-open, like a Python slice), e.g. 1:64") +
                      (cmd->get_name() == "analyze" ? " (with --against: of both tables)" : ""))
      ->type_name("BEGIN:END");
}

void check_tensor_option(const TableSource& t) {
  // The synthetic table's options beside a table read from a file (they would be ignored).
  const TableSource defaults;
  if (t.synthetic.empty())
    for (const auto& [option, given] : {std::pair{"--positions", t.positions != defaults.positions},
                                        {"--dim", t.dims != defaults.dims},
                                        {"--seed", t.seed != defaults.seed},
                                        {"--std", t.std != defaults.std}})
      if (given)
        throw Error(std::string(option) + ": applies to a --synthetic table, not to " +
                        (t.input.empty() ? std::string("a table read from a file") : t.input),
                    std::string("leave ") + option + " out, or pass --synthetic KIND");
  if (t.tensor.empty()) return;
  if (t.synthetic.empty() && !t.input.empty() &&
      (is_model_folder(t.input) || fs::path(t.input).extension() == ".safetensors"))
    return;
  const std::string what = t.synthetic.empty() ? t.input : "--synthetic " + t.synthetic;
  throw Error("--tensor " + t.tensor + ": applies to a .safetensors file or a model folder, not " + what,
              "leave --tensor out: " + what + " gives its one table");
}

void add_verdict_options(CLI::App* cmd, VerdictThresholds& t) {
  cmd->add_option(
         "--min-signal-share", t.min_signal_share,
         "verdict: low rank when the components above the noise floor hold at least this share of the variance")
      ->check(kShare)
      ->capture_default_str();
  cmd->add_option("--smooth-z", t.smooth_z,
                  "verdict: smooth when the adjacent cosine is this many sd above the shuffled copies' mean")
      ->capture_default_str()
      ->check(kNonNegative);
  // The thresholds of the verdict on k90 / effective-rank ratios to step 0 and a fixed cosine margin: named, with
  // what replaced them, rather than "not expected".
  for (const char* old : {"--rank-ratio", "--smooth-margin"})
    cmd->add_option_function<double>(
           old,
           [old](double) {
             throw Error(std::string(old) +
                             " is no longer an option: the verdict reads the noise floor and the shuffled copies",
                         "use --min-signal-share (share of the variance above the noise floor) or --smooth-z (sd above "
                         "the shuffled copies); docs/analysis.md, \"Trajectory and verdict\"");
           })
        ->group("");
}

}  // namespace poslab
