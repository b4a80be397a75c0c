// The poslab command line: parses arguments and dispatches to the library.
#pragma once

namespace poslab {

// Returns the process exit code. Throws poslab::Error (and others) for main() to report.
int run_cli(int argc, char** argv);

}  // namespace poslab
