#include "util/lock.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"
#include "util/fs.h"

namespace poslab {
namespace {

std::string hostname() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

// When process `pid` started, as "BOOT_ID:TICKS" (the kernel's boot id, and field 22 of /proc/PID/stat: clock ticks
// since boot); "" where /proc does not say. A pid the kernel has since given to another process, this boot or after a
// reboot, has another stamp.
std::string start_stamp(long pid) {
  std::string boot, stat;
  std::getline(std::ifstream("/proc/sys/kernel/random/boot_id"), boot);
  std::getline(std::ifstream("/proc/" + std::to_string(pid) + "/stat"), stat);
  const size_t name_end = stat.rfind(')');  // the command's name, in parentheses, may hold spaces
  if (boot.empty() || name_end == std::string::npos) return "";
  std::istringstream fields(stat.substr(name_end + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i)
    if (!(fields >> field)) return "";
  return boot + ":" + field;
}

}  // namespace

RunLock::RunLock(const std::string& lock_path, const std::string& holder) : path_(lock_path) {
  const std::string run_dir = std::filesystem::path(path_).parent_path().string();
  const std::string folder = holder == "trainer" ? "run folder" : holder + " folder";
  const std::string me = std::to_string(::getpid()) + " " + hostname() + " " + start_stamp(::getpid()) + "\n";
  for (int attempt = 0; attempt < 2; ++attempt) {
    crash_point("open", path_);
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
      crash_point_write(fd, me.data(), me.size(), path_);
      const ssize_t n = ::write(fd, me.data(), me.size());
      ::close(fd);
      if (n != static_cast<ssize_t>(me.size()))
        throw Error(path_ + ": cannot write the lock file", "check free space and permissions");
      return;
    }
    if (errno != EEXIST)
      throw Error(path_ + ": cannot create the lock file: " + std::strerror(errno), "check the folder's permissions");
    long pid = 0;
    std::string host, stamp;  // a lock without a stamp (/proc did not say) is judged by its pid alone
    std::ifstream(path_) >> pid >> host >> stamp;
    const bool exists = pid > 0 && host == hostname() && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
    const bool reused = exists && !stamp.empty() && start_stamp(pid) != stamp;
    if (exists && !reused)
      throw Error(run_dir + ": another " + holder + " (pid " + std::to_string(pid) + ") is using this " + folder +
                      " (" + path_ + ")",
                  "wait for it to finish or stop it; if no such process runs, delete " + path_);
    if (host != hostname() && !host.empty())
      throw Error(run_dir + ": locked by pid " + std::to_string(pid) + " on host " + host + " (" + path_ + ")",
                  "if that " + holder + " is gone, delete " + path_);
    spdlog::warn("{}: stale lock of pid {} ({}); taking it over", path_, pid,
                 reused ? "that pid is now another process's" : "no such process");
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  throw Error(path_ + ": another " + holder + " took the lock at the same moment",
              "run one " + holder + " per " + folder);
}

RunLock::~RunLock() {
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

}  // namespace poslab
