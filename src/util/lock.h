// RUN_DIR/lock: one trainer per run folder. Holds "pid hostname"; a lock whose process is gone is stale and
// taken over with a warning.
#pragma once

#include <string>

namespace poslab {

class RunLock {
 public:
  // Throws poslab::Error naming the folder and the pid when another live process holds it.
  explicit RunLock(const std::string& run_dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  std::string path_;
};

}  // namespace poslab
