#include "util/fs.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include "util/error.h"
#include "util/process.h"

namespace poslab {
namespace fs = std::filesystem;

std::string write_fault_cause(int err, const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  switch (err) {
    case EACCES:
    case EPERM:
      return "this user may not write in " + folder + ": check its permissions (ls -ld " + folder + ")";
    case EROFS:
      return folder + " is on a read-only file system: remount it writable, or work on a writable disk";
    case ENOTDIR:
      return "a part of " + path + " is a file where a folder goes: move that file away";
    case EISDIR:
      return path + " is a folder where a file goes: move it away";
    case ENOENT:
      return folder + " is gone (moved or deleted while poslab ran): put it back";
    default:
      return "";
  }
}

namespace {

struct CrashPlan {
  int64_t at = 0;     // POSLAB_CRASH_AT; 0: never
  bool torn = false;  // POSLAB_CRASH_TORN=1
  int log_fd = -1;    // POSLAB_CRASH_LOG
};

const CrashPlan& crash_plan() {
  static const CrashPlan plan = [] {
    CrashPlan p;
    if (const char* at = std::getenv("POSLAB_CRASH_AT")) p.at = std::atoll(at);
    if (const char* torn = std::getenv("POSLAB_CRASH_TORN")) p.torn = std::string(torn) == "1";
    if (const char* log = std::getenv("POSLAB_CRASH_LOG"); log && *log)
      p.log_fd = ::open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    return p;
  }();
  return plan;
}

std::atomic<int64_t> crash_points_reached{0};

// Counts the point; true when the process is to end here.
bool at_crash_point(const char* kind, const std::string& path) {
  const CrashPlan& plan = crash_plan();
  if (plan.at <= 0 && plan.log_fd < 0) return false;
  const int64_t n = ++crash_points_reached;
  if (plan.log_fd >= 0) {
    const std::string line = std::to_string(n) + " " + kind + " " + path + "\n";
    [[maybe_unused]] const ssize_t w = ::write(plan.log_fd, line.data(), line.size());
  }
  return n == plan.at;
}

[[noreturn]] void crash_now() {
  ::raise(SIGKILL);
  std::abort();  // not reached
}

// fsyncs a file (or a folder: O_DIRECTORY) by its path: 0, or the errno of the open or the fsync that failed.
int fsync_of(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int err = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

void fsync_path(const std::string& path, bool directory) {
  crash_point(directory ? "fsync-dir" : "fsync", path);
  fsync_of(path, directory ? O_DIRECTORY : 0);
}

// The hint for an error of `err` at `path`: its cause's, else `fallback`; `intact` said after either.
std::string fault_hint(int err, const std::string& path, const std::string& fallback, const std::string& intact) {
  const std::string cause = write_fault_cause(err, path);
  return (cause.empty() ? fallback : cause) + intact;
}

// The rename of a synced file into place, then the fsync of its folder.
void rename_into_place(const std::string& tmp, const std::string& to) {
  crash_point("rename", to);
  std::error_code ec;
  fs::rename(tmp, to, ec);
  if (ec) {
    const std::string why = ec.message();  // before the temporary's removal sets ec again
    const int err = ec.value();
    const bool folder = fs::is_directory(to, ec);
    fs::remove(tmp, ec);
    if (folder) throw Error(to + ": is a folder, not a file to write", "name a file inside it, or another path");
    throw Error(to + ": cannot replace the file: " + why,
                fault_hint(err, to, "check the folder's permissions and free space", ""));
  }
  const fs::path parent = fs::path(to).parent_path();
  fsync_path(parent.empty() ? "." : parent.string(), true);
}

}  // namespace

void crash_point(const char* kind, const std::string& path) {
  if (at_crash_point(kind, path)) crash_now();
}

void crash_point_write(int fd, const void* data, std::size_t n, const std::string& path) {
  if (!at_crash_point("write", path)) return;
  if (crash_plan().torn && fd >= 0 && n > 1) {
    [[maybe_unused]] const ssize_t w = ::write(fd, data, n / 2);
  }
  crash_now();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open: " + std::strerror(errno), "check that the file exists and is readable");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void make_dirs(const std::string& dir, const std::string& hint) {
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return;
  crash_point("mkdir", dir);
  const std::vector<std::string> made = missing_folders(dir);
  fs::create_directories(dir, ec);
  if (!ec) {
    // Each new folder's name synced into the folder above: a power loss keeps the folder whose files it keeps. (No
    // crash point: a kill here leaves what a kill after the mkdir leaves.)
    for (const std::string& f : made) {
      const fs::path above = fs::path(f).parent_path();
      fsync_of(above.empty() ? "." : above.string(), O_DIRECTORY);
    }
    return;
  }
  const std::string why = ec.message();
  const std::string how =
      hint.empty() ? "choose a writable location, or fix the permissions of the folder above" : hint;
  for (fs::path p = dir; !p.empty() && p != p.parent_path(); p = p.parent_path())  // a file where a folder must be
    if (fs::exists(p, ec) && !fs::is_directory(p, ec))
      throw Error(dir + ": cannot create folder: " + p.string() + " is a file", how);
  throw Error(dir + ": cannot create folder: " + why, how);
}

std::vector<std::string> missing_folders(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  fs::path prefix;
  for (const fs::path& step : fs::path(dir)) {  // as create_directories walks it, ".." and all
    prefix /= step;
    if (step.empty() || step == "." || step == ".." || fs::exists(prefix, ec)) continue;
    out.push_back(prefix.string());
  }
  return out;
}

bool remove_made_folders(const std::vector<std::string>& made) {
  if (made.empty()) return true;
  std::error_code ec;
  fs::remove_all(made.back(), ec);
  if (ec) return false;
  for (auto it = made.rbegin() + 1; it != made.rend(); ++it) {
    if (fs::remove(*it, ec)) continue;
    return !ec || ec == std::errc::directory_not_empty;  // another's files in it since: it stays, and those above
  }
  return true;
}

void write_output_file(const std::string& path, const std::string& bytes) {
  const fs::path folder = fs::path(path).parent_path();
  if (!folder.empty()) make_dirs(folder.string(), "name a file in a folder you can write to");
  write_file_atomic(path, bytes);
}

void commit_file(const std::string& tmp, const std::string& to) {
  crash_point("fsync", tmp);
  if (const int err = fsync_of(tmp, 0); err != 0)
    throw Error(to + ": cannot sync " + tmp + ": " + std::strerror(err),
                "check the disk (free space; dmesg says why a write failed); the previous file is intact");
  rename_into_place(tmp, to);
}

AtomicWriter::AtomicWriter(std::string path, std::string what, std::string hint, std::string after)
    : path_(std::move(path)), what_(std::move(what)), hint_(std::move(hint)), after_(std::move(after)) {
  // PATH.tmp.<pid>. TensorBoard reads every file whose name holds "tfevents", one a killed writer left too: there
  // the temporary is spelled "tf-events".
  const fs::path p(path_);
  std::string name = p.filename().string();
  if (const auto at = name.find("tfevents"); at != std::string::npos) name.replace(at, 8, "tf-events");
  tmp_ = (p.parent_path() / (name + ".tmp." + std::to_string(::getpid()))).string();
  crash_point("open", tmp_);
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int err = errno;
    const std::string cause = write_fault_cause(err, err == EISDIR ? tmp_ : path_);
    throw Error(path_ + ": " + what_ + ": " + tmp_ + ": " + std::strerror(err),
                cause.empty() ? hint_ : cause + "; " + after_);
  }
}

AtomicWriter::~AtomicWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) {
    std::error_code ec;
    fs::remove(tmp_, ec);
  }
}

void AtomicWriter::write(const void* data, std::size_t n) {
  // The file's body is one crash point (LibTorch streams a checkpoint in thousands of pieces): its first write.
  if (failure_.empty() && !written_) crash_point_write(fd_, data, n, tmp_);
  written_ = true;
  const char* p = static_cast<const char*>(data);
  while (failure_.empty() && n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      failure_errno_ = w < 0 ? errno : 0;
      failure_ = w < 0 ? std::strerror(errno) : "short write";
      break;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void AtomicWriter::commit() {
  if (failure_.empty()) crash_point("fsync", tmp_);
  if (failure_.empty() && ::fsync(fd_) != 0) {
    failure_errno_ = errno;
    failure_ = std::strerror(errno);
  }
  if (::close(fd_) != 0 && failure_.empty()) {
    failure_errno_ = errno;
    failure_ = std::strerror(errno);
  }
  fd_ = -1;
  if (!failure_.empty()) {
    const std::string cause = write_fault_cause(failure_errno_, path_);
    throw Error(path_ + ": " + what_ + ": " + failure_, cause.empty() ? hint_ : cause + "; " + after_);
  }
  rename_into_place(tmp_, path_);  // synced above
  committed_ = true;
}

int remove_stale_temporaries(const std::string& dir) {
  std::error_code ec;
  int removed = 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const auto at = name.rfind(".tmp.");
    if (at == std::string::npos || at + 5 >= name.size() ||
        name.find_first_not_of("0123456789", at + 5) != std::string::npos || !e.is_regular_file(ec))
      continue;
    if (fs::remove(e.path(), ec)) ++removed;
  }
  return removed;
}

int remove_dead_temporaries(const std::string& dir, const std::vector<std::string>& names) {
  std::error_code ec;
  std::vector<fs::path> dead;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const auto at = name.rfind(".tmp.");
    if (at == std::string::npos || at + 5 >= name.size() || name.size() - at - 5 > 9 ||
        name.find_first_not_of("0123456789", at + 5) != std::string::npos || !e.is_regular_file(ec) ||
        std::find(names.begin(), names.end(), name.substr(0, at)) == names.end())
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name.substr(at + 5)));
    if (process_is_gone(pid)) dead.push_back(e.path());
  }
  int removed = 0;
  for (const fs::path& p : dead) removed += fs::remove(p, ec) ? 1 : 0;
  return removed;
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  AtomicWriter out(path);
  out.write(bytes.data(), bytes.size());
  out.commit();
}

void append_line(const std::string& path, const std::string& line) { append_bytes(path, line + '\n'); }

void append_bytes(const std::string& path, const std::string& text) {
  crash_point("open", path);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    throw Error(path + ": cannot append: " + std::strerror(err),
                fault_hint(err, path, "check the folder's permissions and free space", ""));
  }
  crash_point_write(fd, text.data(), text.size(), path);
  struct stat before {};
  const bool sized = ::fstat(fd, &before) == 0;
  const ssize_t w = ::write(fd, text.data(), text.size());
  const int err = errno;
  // A short append (a full disk, a file-size limit) is cut off again: the next append must not land after half a line
  const bool torn = w > 0 && w != static_cast<ssize_t>(text.size()) && !(sized && ::ftruncate(fd, before.st_size) == 0);
  ::close(fd);
  if (w != static_cast<ssize_t>(text.size()))
    throw Error(path + ": cannot append: " + (w < 0 ? std::strerror(err) : "short write"),
                fault_hint(w < 0 ? err : 0, path, "free some space and run again",
                           std::string("; earlier lines are intact") +
                               (torn ? " (the last one is cut short: its readers drop it)" : "")));
}

void sync_appended(const std::string& path) {
  auto failed = [](const std::string& p, int err) {
    throw Error(p + ": cannot sync: " + std::strerror(err),
                fault_hint(err, p, "check the disk (free space; dmesg says why it failed)", ""));
  };
  if (const int err = fsync_of(path, 0); err == ENOENT) {
    return;  // a log not yet begun
  } else if (err != 0) {
    failed(path, err);
  }
  const fs::path parent = fs::path(path).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  if (const int err = fsync_of(folder, O_DIRECTORY); err != 0 && err != EINVAL)  // EINVAL: no folder syncs there
    failed(folder, err);
}

std::string disk_fault(const std::string& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return "";
  if (st.f_flag & ST_RDONLY) return std::strerror(EROFS);
  if (static_cast<unsigned long long>(st.f_bavail) * st.f_frsize < (64u << 10)) return std::strerror(ENOSPC);
  return "";
}

}  // namespace poslab
