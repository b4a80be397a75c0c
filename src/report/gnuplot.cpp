#include "report/gnuplot.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <utility>
#include <vector>

#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

namespace poslab {
namespace fs = std::filesystem;

std::string find_gnuplot() {
  if (const char* env = std::getenv("POSLAB_GNUPLOT")) return env;
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(ss, dir, ':');) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / "gnuplot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

void run_gnuplot(const std::string& dir, const std::string& script) {
  std::string gnuplot = find_gnuplot();
  // A path relative to where poslab runs (POSLAB_GNUPLOT=./gnuplot, "" or "." in PATH): the child, which starts it
  // from `dir`, is given it whole.
  if (std::error_code ec; !gnuplot.empty()) gnuplot = fs::absolute(gnuplot, ec).string();
  if (gnuplot.empty())
    throw KeptOutputError(
        "gnuplot not found: the data and script files are in " + dir + ", the figures were not drawn",
        "install it (apt-get install gnuplot-nox, or bash scripts/setup.sh), then run poslab report again");
  const std::string log = (fs::path(dir) / (script + ".log")).string();
  // Its figures (both_formats's STEM.png and STEM.svg) are drawn to STEM.png.tmp.PID and STEM.svg.tmp.PID, as
  // AtomicWriter names its temporaries, then committed; any of those names a killed draw left is removed first.
  const std::string suffix = ".tmp." + std::to_string(::getpid());
  const std::string stem = script.size() > 3 && ends_with(script, ".gp") ? script.substr(0, script.size() - 3) : script;
  std::vector<std::pair<std::string, std::string>> figures;  // temporary, final
  for (const char* ext : {".png", ".svg"}) {
    const std::string to = (fs::path(dir) / (stem + ext)).string();
    figures.emplace_back(to + suffix, to);
  }
  auto remove_temporaries = [&] {
    std::error_code ec;
    for (const auto& figure : figures) fs::remove(figure.first, ec);
  };
  remove_temporaries();
  const pid_t pid = fork();
  if (pid < 0) throw Error("cannot start gnuplot: fork failed", "free memory or processes, then run the command again");
  if (pid == 0) {
    // The log first: its path is relative to where poslab runs, as `dir` is.
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
    }
    if (::chdir(dir.c_str()) != 0) _exit(126);
    ::execl(gnuplot.c_str(), gnuplot.c_str(), "-e", ("out_suffix='" + suffix + "'").c_str(), script.c_str(),
            static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    remove_temporaries();
    std::string msg;
    try {
      msg = read_file(log);
    } catch (const Error&) {
    }
    if (msg.size() > 600) msg = msg.substr(msg.size() - 600);
    if (WIFSIGNALED(status)) {  // a signal to the process group (Ctrl-C), or gnuplot killed: its log says nothing
      std::error_code ec;
      if (msg.empty()) fs::remove(log, ec);
      throw Error((fs::path(dir) / script).string() + ": gnuplot (" + gnuplot + ") was stopped by signal " +
                      std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")",
                  "run the command again to draw the figures");
    }
    if (const std::string fault = disk_fault(dir); !fault.empty())  // gnuplot could not write its figure, or its log
      throw Error((fs::path(dir) / script).string() + ": gnuplot failed (" + gnuplot + "): " + fault,
                  "free some space (or make the folder writable), then write the report again");
    throw Error((fs::path(dir) / script).string() + ": gnuplot failed (" + gnuplot + "): " + msg, "see " + log);
  }
  try {
    for (const auto& [tmp, to] : figures)
      if (std::error_code ec; fs::exists(tmp, ec)) commit_file(tmp, to);  // a script may draw one of the two
  } catch (const Error&) {
    remove_temporaries();
    throw;
  }
  std::error_code ec;
  fs::remove(log, ec);
}

}  // namespace poslab
