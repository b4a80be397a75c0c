// A run folder's lock file (RunFolder::lock): one trainer per run folder; a sweep folder's: one sweep per folder. The
// lock is the file's flock(2), held while the RunLock lives and let go by the kernel when its process dies; the file
// holds "PID HOST BOOT_ID:TICKS", the last naming when the holder started. A file no process holds, whose process is
// gone or whose pid now names a process started at another moment (the pid reused, or a reboot since), is stale and
// taken over with a warning; one naming a live process, or another host's, is left to it.
#pragma once

#include <string>

namespace poslab {

class RunLock {
 public:
  // Takes the lock at `lock_path`. Throws poslab::Error naming the folder and the pid when another live process
  // holds it. `holder` names such a process in messages: "trainer" (a run folder's), "sweep" (a sweep folder's).
  explicit RunLock(const std::string& lock_path, const std::string& holder = "trainer");
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;  // the open lock file, its flock(2) held
};

}  // namespace poslab
