// Shared test helpers: a fresh temporary folder per test and a small generated corpus.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "util/error.h"
#include "util/platform.h"

namespace poslab::test {

// What spdlog's default logger says while this lives, kept in a string; the previous logger is back at the end.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    spdlog::set_default_logger(
        std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;
  std::string str() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::logger> previous_;
};

// A new empty folder under $POSLAB_TEST_TMP (or the system temp folder), removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("POSLAB_TEST_TMP");
    std::filesystem::path root = base ? base : std::filesystem::temp_directory_path() / "poslab-tests";
    std::filesystem::create_directories(root);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "test";
    for (auto& c : name)
      if (c == '/') c = '_';
    path_ = root / (name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }
  std::string operator/(const std::string& rel) const { return (path_ / rel).string(); }

 private:
  std::filesystem::path path_;
};

// An environment variable set (or, with nullptr, unset) for a scope, then put back as it was, whatever the test did.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* was = environment_value(name);  // not getenv: it answers for two unset OpenBLAS variables
    had_ = was != nullptr;
    if (had_) saved_ = was;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_.c_str(), saved_.c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, saved_;
  bool had_ = false;
};

// "what | hint" of the poslab::Error that f throws; a test failure (and "") when it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return std::string(e.what()) + " | " + e.hint();
  }
  ADD_FAILURE() << "expected poslab::Error";
  return "";
}

// A pid no process has now: a child's that has exited and been waited for (a dead holder of a lock, a killed writer).
inline pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) _exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

// A forked child's exit status (waitpid's) and what it wrote to the pipe it was given.
struct ChildRun {
  int status = 0;
  std::string out;
};

// Runs child(fd) in a forked process, so that what it changes (a resource limit, signal handlers) stays out of the
// other tests, and collects what it writes to fd (with `stderr_too`, its stderr as well) until it exits; the child
// _exit(0)s when child returns. It runs beside the parent's threads: it should not allocate.
template <typename F>
ChildRun in_child(F&& child, bool stderr_too = false) {
  int fds[2];
  ChildRun r;
  if (::pipe(fds) != 0) {
    ADD_FAILURE() << "pipe failed";
    return r;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    if (stderr_too) ::dup2(fds[1], STDERR_FILENO);
    child(fds[1]);
    ::_exit(0);
  }
  ::close(fds[1]);
  char buf[512];
  for (ssize_t n; pid > 0 && (n = ::read(fds[0], buf, sizeof buf)) > 0;) r.out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  if (pid < 0 || ::waitpid(pid, &r.status, 0) != pid) ADD_FAILURE() << "fork or waitpid failed";
  return r;
}

// One JSON value per non-empty line (metrics.jsonl, snapshots/index.jsonl).
inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

inline void write_text(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// Deterministic English-like text with regular structure (so a tiny model's loss falls quickly).
inline std::string generated_corpus(size_t lines, unsigned seed = 7) {
  const std::vector<std::string> subj = {"the cat", "a dog", "my friend", "the old man", "a bird", "the queen"};
  const std::vector<std::string> verb = {"sat on", "looked at", "ran to", "sang for", "dreamed of"};
  const std::vector<std::string> obj = {"the mat", "a tree", "the river", "the king", "a small house"};
  std::mt19937 rng(seed);
  std::string out;
  for (size_t i = 0; i < lines; ++i)
    out += subj[rng() % subj.size()] + " " + verb[rng() % verb.size()] + " " + obj[rng() % obj.size()] + ".\n";
  return out;
}

}  // namespace poslab::test
