// libFuzzer target: the sweep file reader (src/sweep/sweep.h). The input is the sweep file, beside a small base
// config it may name (base: base.yaml); any text must give a sweep whose runs and folder can be listed, or a
// poslab::Error naming the file and the key — never a crash or another exception.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "sweep/sweep.h"
#include "util/error.h"

namespace {

namespace fs = std::filesystem;

const std::string& folder() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    const fs::path d = fs::path(tmp ? tmp : "/tmp") / ("poslab-fuzz-sweep-" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::ofstream(d / "base.yaml") << "model:\n  n_layer: 1\n  n_embd: 8\n  n_head: 2\n  block_size: 8\n"
                                      "train:\n  max_steps: 4\n";
    return d.string();
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = folder() + "/fuzz.yaml";
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), size);
  try {
    const poslab::Sweep sweep = poslab::load_sweep(path);
    poslab::sweep_runs(sweep, {});
    poslab::sweep_dir(sweep, {});
  } catch (const poslab::Error&) {
  }
  return 0;
}
