// poslab inspect / sample / eval / extend.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "model/sample.h"

namespace poslab {

struct InspectArgs {
  std::string checkpoint;
};
struct SampleArgs {
  std::string checkpoint, prompt;
  std::string device = "auto";  // auto | cpu | cuda, as run.device
  SampleOptions options;
};
struct EvalArgs {
  std::string checkpoint, split = "val", out;
  std::string device = "auto";      // auto | cpu | cuda, as run.device
  int batches = 0, batch_size = 0;  // 0 = the run's train.eval_batches / train.batch_size
  std::vector<int64_t> shifts;      // --shift: start rows of the windows in the table (train/evaluate.h)
  std::vector<std::string> corpus;  // --corpus: the run's corpus at another place (default: its data.corpus)
  bool force = false;               // replace an existing --out file
};

struct ExtendArgs {
  std::string checkpoint, method = "linear", out;
  int64_t to = 0, seed = -1;
  bool force = false;
};

CLI::App* add_inspect_command(CLI::App& app, InspectArgs& a);
CLI::App* add_sample_command(CLI::App& app, SampleArgs& a);
CLI::App* add_eval_command(CLI::App& app, EvalArgs& a);
CLI::App* add_extend_command(CLI::App& app, ExtendArgs& a);

int run_inspect(const InspectArgs& a);
int run_sample(const SampleArgs& a);
int run_eval(const EvalArgs& a);
int run_extend(const ExtendArgs& a);

}  // namespace poslab
