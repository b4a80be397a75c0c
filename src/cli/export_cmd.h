// poslab export: a checkpoint in the tools people already use (docs/interop.md).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace poslab {

struct ExportArgs {
  std::string input;      // a checkpoint or a run folder
  std::string to = "hf";  // hf | tensorboard
  std::string out;        // the folder written
};

CLI::App* add_export_command(CLI::App& app, ExportArgs& a);
int run_export(const ExportArgs& a);

}  // namespace poslab
