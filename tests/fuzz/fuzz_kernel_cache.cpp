// libFuzzer target: the kernel-path cache (CACHE/kernel_paths.json, tune/kernel_cache.h) as a run reads it at start.
// Any bytes must give the entry or nothing (a damaged cache is a warning and a new measurement), never a crash or
// an exception. The entry read is the one under "k" (the seeds use that key).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "tune/kernel_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    spdlog::set_level(spdlog::level::off);  // every damaged input warns
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp ? tmp : "/tmp") + "/poslab-fuzz-kernel-cache-" + std::to_string(::getpid()) + ".json";
  }();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), size);
  poslab::read_kernel_cache(path, "k");
  return 0;
}
