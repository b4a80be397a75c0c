// poslab sweep / compare.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "sweep/sweep.h"

namespace poslab {

struct SweepArgs {
  std::string file;
  SweepOptions options;
};
struct CompareArgs {
  std::vector<std::string> dirs;
  std::string out;     // default: SWEEP_DIR/compare for one sweep folder, else ./compare
  bool force = false;  // write into an --out folder that holds other files
};

CLI::App* add_sweep_command(CLI::App& app, SweepArgs& a);
CLI::App* add_compare_command(CLI::App& app, CompareArgs& a);

int run_sweep_command(const SweepArgs& a);
int run_compare(const CompareArgs& a);

}  // namespace poslab
