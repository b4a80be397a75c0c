// What poslab prints for a command line CLI11 cannot parse: an `error:` line in poslab's words and a `hint:` naming
// the help to read. Mistyped options are named with the options they are likely a slip of.
#pragma once

#include <CLI/CLI.hpp>

namespace poslab {

// Writes the error and hint to stderr; returns the exit code (2).
int report_parse_error(const CLI::App& app, const CLI::ParseError& e);

}  // namespace poslab
