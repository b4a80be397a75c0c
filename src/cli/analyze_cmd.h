// poslab analyze: the position-table analysis of a run folder, a checkpoint, a .npy, a .safetensors tensor
// or a synthetic table.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "analysis/analysis.h"
#include "analysis/trajectory.h"
#include "load/table_source.h"

namespace poslab {

struct AnalyzeArgs {
  TableSource table;   // table.input may also be a run folder
  std::string rows;    // "A:B"
  std::string json;    // FILE or "-"
  bool force = false;  // replace an existing --json file
  bool baselines = false;
  bool probes = false;         // Wang & Chen's absolute and relative probes (analysis/probes.h)
  std::string against;         // a second table: compare the two up to rotation (analysis/agreement.h)
  std::string against_tensor;  // its tensor name, when it is a .safetensors file
  int k = 0;                   // principal angles between the top-k subspaces (0: from the signal ranks)
  AnalysisOptions options;
  VerdictThresholds thresholds;
};

CLI::App* add_analyze_command(CLI::App& app, AnalyzeArgs& args);
int run_analyze(const AnalyzeArgs& args);

}  // namespace poslab
