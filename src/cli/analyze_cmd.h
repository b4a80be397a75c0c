// poslab analyze: the position-table analysis of a run folder, a checkpoint, a .npy, a .safetensors tensor
// or a synthetic table.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "analysis/analysis.h"
#include "analysis/trajectory.h"

namespace poslab {

struct AnalyzeArgs {
  std::string input;        // run folder, .pt, .npy or .safetensors
  std::string tensor;       // --tensor NAME for .safetensors
  std::string synthetic;    // random | sinusoidal | handbook
  int64_t positions = 1024;
  int64_t dims = 768;
  uint64_t seed = 0;
  double std = 0.02;        // of the random table
  std::string rows;         // "A:B"
  std::string json;         // FILE or "-"
  bool baselines = false;
  AnalysisOptions options;
  VerdictThresholds thresholds;
};

CLI::App* add_analyze_command(CLI::App& app, AnalyzeArgs& args);
int run_analyze(const AnalyzeArgs& args);

}  // namespace poslab
