// poslab report: the HTML page of figures of a run folder, one table or a model folder's tables.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "analysis/trajectory.h"
#include "load/table_source.h"

namespace poslab {

struct ReportArgs {
  TableSource table;  // table.input may also be a run folder
  std::string rows, out;
  VerdictThresholds thresholds;
  bool force = false;  // write into an --out folder that holds other files
};

CLI::App* add_report_command(CLI::App& app, ReportArgs& a);
int run_report(const ReportArgs& a);

}  // namespace poslab
