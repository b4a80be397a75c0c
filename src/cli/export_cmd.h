// poslab export: a checkpoint in the tools people already use (docs/interop.md).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace poslab {

struct ExportArgs {
  std::string input;      // a checkpoint or a run folder
  std::string to = "hf";  // hf | tensorboard
  std::string out;        // the folder written
  bool force = false;     // write into an --out that holds files
};

CLI::App* add_export_command(CLI::App& app, ExportArgs& a);
int run_export(const ExportArgs& a);

}  // namespace poslab
