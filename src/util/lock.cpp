#include "util/lock.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"

namespace poslab {
namespace {

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
  const std::string me = std::to_string(::getpid()) + " " + host_name() + " " + start_stamp(::getpid()) + "\n";
  // The file's flock(2) is the lock: the kernel lets one open file hold it and releases it when its holder dies, so
  // that two processes that find a dead holder's file cannot both take it over. Its text says who holds it.
  for (int attempt = 0; attempt < 3; ++attempt) {
    crash_point("open", path_);
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      throw Error(path_ + ": cannot create the lock file: " + std::strerror(errno),
                  errno == EROFS ? "the disk is read-only: give the folder a place on a writable one"
                                 : "check the folder's permissions");
    long pid = 0;
    std::string host, stamp;  // a lock without a stamp (/proc did not say) is judged by its pid alone
    const auto read_holder = [&] {
      char text[512] = {0};
      const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
      std::istringstream(std::string(text, n > 0 ? static_cast<size_t>(n) : 0)) >> pid >> host >> stamp;
    };
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      read_holder();
      ::close(fd);
      if (err != EWOULDBLOCK)
        throw Error(path_ + ": cannot lock the file: " + std::strerror(err),
                    "the file system must support flock(2): give the folder a place on a local disk");
      throw Error(run_dir + ": another " + holder + (pid > 0 ? " (pid " + std::to_string(pid) + ")" : std::string()) +
                      " is using this " + folder + " (" + path_ + ")",
                  "wait for it to finish or stop it");
    }
    // Held. The file may have been taken away by its last holder between our open and our lock: then it is no
    // longer the lock at path_, and we start again.
    struct stat held {
    }, named{};
    if (::fstat(fd, &held) != 0 || ::stat(path_.c_str(), &named) != 0 || held.st_ino != named.st_ino ||
        held.st_dev != named.st_dev) {
      ::close(fd);
      continue;
    }
    read_holder();
    // A live process named in a lock it does not hold (a poslab before locks were flocks, a file written by hand).
    const bool exists = pid > 0 && host == host_name() && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
    const bool reused = exists && !stamp.empty() && start_stamp(pid) != stamp;
    if ((exists && !reused) || (host != host_name() && !host.empty())) {
      ::close(fd);
      if (exists && !reused)
        throw Error(run_dir + ": another " + holder + " (pid " + std::to_string(pid) + ") is using this " + folder +
                        " (" + path_ + ")",
                    "wait for it to finish or stop it; if no such process runs, delete " + path_);
      throw Error(run_dir + ": locked by pid " + std::to_string(pid) + " on host " + host + " (" + path_ + ")",
                  "if that " + holder + " is gone, delete " + path_);
    }
    if (pid > 0 || !host.empty())
      spdlog::warn("{}: stale lock of pid {} ({}); taking it over", path_, pid,
                   reused ? "that pid is now another process's" : "no such process");
    const bool emptied = ::ftruncate(fd, 0) == 0;
    crash_point_write(fd, me.data(), me.size(), path_);
    if (!emptied || ::pwrite(fd, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
      ::close(fd);
      throw Error(path_ + ": cannot write the lock file", "check free space and permissions");
    }
    fd_ = fd;
    return;
  }
  throw Error(path_ + ": another " + holder + " took the lock at the same moment",
              "run one " + holder + " per " + folder);
}

RunLock::~RunLock() {
  // Taken away while still held (a process that opened it meets the lock, and starts again), and only if the file
  // there is still this lock's (not one put in its place by hand since).
  struct stat held {
  }, named{};
  if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
      held.st_dev == named.st_dev)
    ::unlink(path_.c_str());
  ::close(fd_);
}

}  // namespace poslab
