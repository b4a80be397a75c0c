// The options that name one table and the verdict's thresholds, shared by poslab analyze and poslab report.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "analysis/trajectory.h"
#include "load/table_source.h"

namespace poslab {

// The options that name one table (INPUT, --tensor, --synthetic, --positions, --dim, --seed, --std, --rows).
void add_table_options(CLI::App* cmd, TableSource& table, std::string& rows);

// --tensor names a tensor of a .safetensors file or a model folder; --positions, --dim, --seed and --std shape a
// --synthetic table: with any other input, an error (they would be ignored).
void check_tensor_option(const TableSource& table);

// --min-signal-share and --smooth-z, the verdict's thresholds.
void add_verdict_options(CLI::App* cmd, VerdictThresholds& thresholds);

}  // namespace poslab
