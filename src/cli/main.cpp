// poslab: a thin main. Parse, dispatch, turn exceptions into one "error:" line and an exit code.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/Error.hpp>
#include <iostream>

#include "cli/commands.h"
#include "distributed/env.h"
#include "util/error.h"
#include "util/platform.h"

int main(int argc, char** argv) {
  poslab::ensure_fast_blas(argc, argv);  // may re-execute once with OPENBLAS_CORETYPE set
  poslab::keep_freed_memory();
  spdlog::set_default_logger(spdlog::stderr_color_mt("poslab"));
  spdlog::set_pattern("%H:%M:%S %^%l%$ %v");
  try {
    return poslab::run_cli(argc, argv);
  } catch (const poslab::Error& e) {
    std::cerr << poslab::error_prefix() << "error: " << e.what() << "\n";
    if (!e.hint().empty()) std::cerr << poslab::error_prefix() << "hint: " << e.hint() << "\n";
    return 2;
  } catch (const CLI::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << poslab::error_prefix() << "error: " << e.what() << "\n";
    return 1;
  }
}
