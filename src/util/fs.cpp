#include "util/fs.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace poslab {
namespace fs = std::filesystem;

namespace {
void fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}
}  // namespace

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open: " + std::strerror(errno), "check that the file exists and is readable");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void make_dirs(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(dir + ": cannot create folder: " + ec.message(), "choose a writable location (run.out_dir)");
}

void commit_file(const std::string& tmp, const std::string& to) {
  fsync_path(tmp, false);
  std::error_code ec;
  fs::rename(tmp, to, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(to + ": cannot replace the file: " + ec.message(), "check the folder's permissions and free space");
  }
  const fs::path parent = fs::path(to).parent_path();
  fsync_path(parent.empty() ? "." : parent.string(), true);
}

AtomicWriter::AtomicWriter(std::string path, std::string what, std::string hint)
    : path_(std::move(path)), what_(std::move(what)), hint_(std::move(hint)) {
  tmp_ = path_ + ".tmp." + std::to_string(::getpid());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(path_ + ": " + what_ + ": " + tmp_ + ": " + std::strerror(errno), hint_);
}

AtomicWriter::~AtomicWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) {
    std::error_code ec;
    fs::remove(tmp_, ec);
  }
}

void AtomicWriter::write(const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (failure_.empty() && n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      failure_ = w < 0 ? std::strerror(errno) : "short write";
      break;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void AtomicWriter::commit() {
  if (failure_.empty() && ::fsync(fd_) != 0) failure_ = std::strerror(errno);
  if (::close(fd_) != 0 && failure_.empty()) failure_ = std::strerror(errno);
  fd_ = -1;
  if (!failure_.empty()) throw Error(path_ + ": " + what_ + ": " + failure_, hint_);
  commit_file(tmp_, path_);
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

void write_file_atomic(const std::string& path, const std::string& bytes) {
  AtomicWriter out(path);
  out.write(bytes.data(), bytes.size());
  out.commit();
}

void append_line(const std::string& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(path + ": cannot append: " + std::strerror(errno), "check the folder's permissions and free space");
  const std::string text = line + '\n';
  const ssize_t w = ::write(fd, text.data(), text.size());
  const int err = errno;
  ::close(fd);
  if (w != static_cast<ssize_t>(text.size()))
    throw Error(path + ": cannot append: " + (w < 0 ? std::strerror(err) : "short write"),
                "free some space and run again; earlier lines are intact");
}

std::string disk_fault(const std::string& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return "";
  if (st.f_flag & ST_RDONLY) return std::strerror(EROFS);
  if (static_cast<unsigned long long>(st.f_bavail) * st.f_frsize < (64u << 10)) return std::strerror(ENOSPC);
  return "";
}

}  // namespace poslab
