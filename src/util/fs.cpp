#include "util/fs.h"

#include <fcntl.h>
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

void write_file_atomic(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(path + ": cannot write: " + std::strerror(errno), "check the folder's permissions and free space");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw Error(path + ": write failed (disk full?)", "free some space and run again; the previous file is intact");
    }
  }
  commit_file(tmp, path);
}

void append_line(const std::string& path, const std::string& line) {
  std::ofstream out(path, std::ios::app);
  out << line << '\n';
  out.flush();
  if (!out) throw Error(path + ": cannot append: " + std::strerror(errno), "check the folder's permissions and free space");
}

}  // namespace poslab
