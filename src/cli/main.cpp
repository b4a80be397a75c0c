// poslab: a thin main. Parse, dispatch, turn exceptions into one "error:" line and an exit code.
#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/Error.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <new>
#include <string>

#include "cli/commands.h"
#include "distributed/env.h"
#include "util/error.h"
#include "util/log.h"
#include "util/platform.h"

namespace {

// What to do when memory ran out, by command: a training run resumes; another command's input was too large.
std::string out_of_memory_hint(int argc, char** argv) {
  std::string command;
  for (int i = 1; i < argc && command.empty(); ++i)
    if (argv[i][0] != '-') command = argv[i];
  if (command == "train" || command == "sweep")
    return "make the job smaller (train.batch_size, model.n_layer, model.n_embd, model.block_size) or free memory; "
           "what was written is intact, and a run stopped this way goes on with poslab train --resume RUN_DIR";
  return "the input needs more memory than this process may use (the size above): free memory, raise the limit "
         "(ulimit -v, the cgroup's), or use a machine with more; nothing was written";
}

// LibTorch's CPU allocator says "[enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate
// memory: you tried to allocate N bytes. Error code 12 (…)": the user's part is N.
std::string allocation_words(const std::string& what) {
  const std::string marker = "you tried to allocate ";
  const auto at = what.find(marker);
  if (at == std::string::npos) return what;
  const double bytes = std::strtod(what.c_str() + at + marker.size(), nullptr);
  if (!(bytes > 0)) return what;
  char size[64];
  std::snprintf(size, sizeof size, bytes >= 1 << 30 ? "%.1f GiB" : "%.1f MiB",
                bytes / (bytes >= 1 << 30 ? 1 << 30 : 1 << 20));
  return std::string("a tensor of ") + size + " could not be allocated";
}

int run(int argc, char** argv) {
  try {
    return poslab::run_cli(argc, argv);
  } catch (const poslab::Error& e) {
    std::cerr << poslab::error_prefix() << "error: " << e.what() << "\n";
    if (!e.hint().empty()) std::cerr << poslab::error_prefix() << "hint: " << e.hint() << "\n";
    return 2;
  } catch (const CLI::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << poslab::error_prefix() << "error: out of memory\n"
              << poslab::error_prefix() << "hint: " << out_of_memory_hint(argc, argv) << "\n";
    return 2;
  } catch (const std::exception& e) {
    // LibTorch's errors carry the C++ stack after the message: the message alone is the user's.
    std::string what = e.what();
    for (const char* stack : {"Exception raised from ", "\nframe #0"})
      if (const auto at = what.find(stack); at != std::string::npos) what.resize(at);
    while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
    const bool memory = what.find("can't allocate memory") != std::string::npos ||  // LibTorch 1.13's allocator
                        what.find("not enough memory") != std::string::npos ||      // 2.x's
                        what.find("out of memory") != std::string::npos;
    if (memory) what = allocation_words(what);
    std::cerr << poslab::error_prefix() << "error: " << (memory ? "out of memory: " : "") << what << "\n";
    if (memory) std::cerr << poslab::error_prefix() << "hint: " << out_of_memory_hint(argc, argv) << "\n";
    return memory ? 2 : 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  poslab::ensure_fast_blas(argc, argv);  // OpenBLAS's variables, given through getenv (util/platform.h)
  poslab::keep_freed_memory();
  // Every command on all the cores, whatever LibTorch's own default (1 thread where its CPU detection fails, as on
  // some AMD Zen 5 machines), unless OMP_NUM_THREADS says otherwise; a run's config (run.threads) sets its own later.
  if (const char* omp = std::getenv("OMP_NUM_THREADS"); omp == nullptr || *omp == '\0') poslab::apply_threads(0);
  spdlog::set_default_logger(spdlog::stderr_color_mt("poslab"));
  poslab::set_log_pattern("%H:%M:%S %^%l%$ %v");
  spdlog::cfg::load_env_levels();  // SPDLOG_LEVEL=debug: the debug lines too (every file a corpus leaves out)
  const int rc = run(argc, argv);
  // Everything poslab wrote is flushed here, and its files closed as run() returned. The static destructors left are
  // LibTorch's, which unregister its thousands of operators one by one: ~0.1 s of every command (Debian's LibTorch,
  // 2-core AMD EPYC), skipped.
  std::cout.flush();
  std::cerr.flush();
  spdlog::shutdown();
  std::fflush(nullptr);
  std::_Exit(rc);
}
