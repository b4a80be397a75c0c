// libFuzzer target: the readers of a run folder's and a sweep folder's files (src/run/run_files.h). The first
// byte picks the file, the rest is its content; every input must read or give a poslab::Error naming the file,
// never a crash or another exception; a TensorBoard event file cut for a resume holds whole records only (a JSON or
// number-parsing error escaping a reader is a bug: the user would see no file name and no fix).
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "formats/tfevents.h"
#include "run/run_files.h"
#include "run/run_folder.h"
#include "run/tensorboard_files.h"
#include "util/error.h"
#include "util/fs.h"

namespace {

namespace fs = std::filesystem;

// One folder per process, made once: RUN/ with its subfolders, and SWEEP/ for sweep.json.
const std::string& root() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    const fs::path d = fs::path(tmp ? tmp : "/tmp") / ("poslab-fuzz-run-" + std::to_string(::getpid()));
    fs::create_directories(d / "run" / "snapshots");
    fs::create_directories(d / "run" / "eval");
    fs::create_directories(d / "run" / "tensorboard");
    fs::create_directories(d / "sweep");
    return d.string();
  }();
  return dir;
}

void write(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const poslab::RunFolder run(root() + "/run");
  const std::string sweep = root() + "/sweep";
  const int which = data[0] % 10;
  ++data;
  --size;
  try {
    switch (which) {
      case 0:
        write(run.metrics(), data, size);
        poslab::val_evals(poslab::read_metrics(run.metrics()));
        break;
      case 1:
        write(run.snapshot_index(), data, size);
        poslab::read_snapshot_index(run);
        break;
      case 2:
        write(run.snapshot_usage(100), data, size);
        poslab::read_snapshot_usage(run, 100);
        break;
      case 3:
        write(run.kernel_paths(), data, size);
        poslab::read_kernel_record(run);
        break;
      case 4:
        write(run.position_loss("val"), data, size);
        poslab::read_position_loss(run.position_loss("val"));
        break;
      case 5:
        write(run.shift_loss("val"), data, size);
        poslab::read_shift_loss(run.shift_loss("val"));
        break;
      case 6:
        write(root() + "/run/x.extension.json", data, size);
        poslab::read_extension_info(root() + "/run/x.extension.json");
        break;
      case 7:
        write(poslab::sweep_index_path(sweep), data, size);
        poslab::read_sweep_index(sweep);
        break;
      case 9: {  // TensorBoard's event file of a resumed run, cut to step 5 (and read back, whole records only)
        const std::string events = run.tensorboard_dir() + "/events.out.tfevents.0001.poslab";
        write(events, data, size);
        poslab::truncate_events_after(run, 5);
        const std::string kept = poslab::read_file(events);
        if (poslab::read_tf_events(kept).valid != kept.size()) __builtin_trap();  // the cut left a part record
        break;
      }
      default:
        write(run.config(), data, size);
        poslab::read_run_config(run);
        break;
    }
  } catch (const poslab::Error&) {
  }
  return 0;
}
