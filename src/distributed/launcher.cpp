#include "distributed/launcher.h"

#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "distributed/env.h"
#include "util/error.h"

extern char** environ;

namespace poslab {
namespace {

using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_forward = 0;  // a signal to pass on to the workers
extern "C" void on_launcher_signal(int sig) { g_forward = sig; }

// The launcher's per-rank step file: nproc int64 steps, written by each worker's Comm::set_step. Its name is taken
// away as soon as it is made, so that a launcher killed with SIGKILL leaves nothing in TMPDIR: the workers inherit
// its descriptor and open it as /proc/self/fd/N.
class StepFile {
 public:
  explicit StepFile(int nproc) : nproc_(nproc) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/poslab-steps-XXXXXX";
    fd_ = ::mkstemp(pattern.data());
    if (fd_ < 0)
      throw Error(pattern + ": cannot create the launcher's step file: " + std::strerror(errno),
                  "set TMPDIR to a writable folder");
    ::unlink(pattern.c_str());
    path_ = "/proc/self/fd/" + std::to_string(fd_);
    const std::vector<int64_t> none(nproc, -1);
    if (::pwrite(fd_, none.data(), none.size() * sizeof(int64_t), 0) < 0)
      spdlog::warn("{}: {}", pattern, std::strerror(errno));
  }
  ~StepFile() { ::close(fd_); }
  StepFile(const StepFile&) = delete;
  StepFile& operator=(const StepFile&) = delete;
  const std::string& path() const { return path_; }
  int64_t step(int rank) const {
    int64_t s = -1;
    if (rank < nproc_ && ::pread(fd_, &s, sizeof s, static_cast<off_t>(rank) * sizeof s) != sizeof s) return -1;
    return s;
  }

 private:
  int nproc_;
  int fd_ = -1;
  std::string path_;
};

std::string describe_status(int status) {
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

int exit_code_of(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

struct Worker {
  pid_t pid = -1;
  bool running = false;
  int status = 0;
};

// The environment of the launcher without the variables it sets for its workers.
std::vector<std::string> inherited_environment() {
  const char* launch_vars[] = {"RANK=",
                               "WORLD_SIZE=",
                               "LOCAL_RANK=",
                               "LOCAL_WORLD_SIZE=",
                               "MASTER_ADDR=",
                               "MASTER_PORT=",
                               "GROUP_RANK=",
                               "POSLAB_STEP_FILE=",
                               "TORCHELASTIC_USE_AGENT_STORE="};
  std::vector<std::string> inherited;
  for (char** e = environ; *e != nullptr; ++e) {
    bool replaced = false;
    for (const char* v : launch_vars) replaced = replaced || std::strncmp(*e, v, std::strlen(v)) == 0;
    if (!replaced) inherited.emplace_back(*e);
  }
  return inherited;
}

// Each rank's environment: the launcher's, with the rendezvous of torchrun --standalone and the step file.
std::vector<std::vector<std::string>> worker_environments(int n, int port, const std::string& step_file) {
  std::vector<std::vector<std::string>> envs(n, inherited_environment());
  for (int r = 0; r < n; ++r) {
    for (const std::string& kv :
         {"RANK=" + std::to_string(r), "WORLD_SIZE=" + std::to_string(n), "LOCAL_RANK=" + std::to_string(r),
          "LOCAL_WORLD_SIZE=" + std::to_string(n), std::string("MASTER_ADDR=127.0.0.1"),
          "MASTER_PORT=" + std::to_string(port), std::string("GROUP_RANK=0"), "POSLAB_STEP_FILE=" + step_file})
      envs[r].push_back(kv);
  }
  return envs;
}

// The strings as execve takes them: pointers into `strings` (which must outlive them), then a null.
std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Forks one worker per rank, each running this program with `args` and its rank's environment.
std::vector<Worker> start_workers(const std::vector<std::string>& args,
                                  const std::vector<std::vector<std::string>>& envs) {
  // Every worker's argv and environment, built before the first fork (a forked child only calls execve).
  std::vector<char*> argv = c_strings(args);
  std::vector<std::vector<char*>> envps;
  for (const auto& env : envs) envps.push_back(c_strings(env));

  const pid_t launcher = ::getpid();
  const int n = static_cast<int>(envs.size());
  std::vector<Worker> workers(n);
  for (int r = 0; r < n; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0)
      throw Error(std::string("fork(): ") + std::strerror(errno), "free some memory or processes, or lower --nproc");
    if (pid == 0) {
      // A process group of its own: a Ctrl-C reaches the launcher only, which passes it on once. If the launcher
      // dies, the worker is told to stop.
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != launcher) ::_exit(1);
      ::execve("/proc/self/exe", argv.data(), envps[r].data());
      ::_exit(127);
    }
    workers[r] = {pid, true, 0};
  }
  return workers;
}

// Waits for every worker to end, passing on the launcher's signals, and stops the others when one fails (see
// launch_local). Returns the exit status.
int watch_workers(std::vector<Worker>& workers, const StepFile& steps, int grace_s) {
  const int n = static_cast<int>(workers.size());
  int result = 0, failed_rank = -1, forwarded = 0;
  Clock::time_point term_at{}, kill_at{};
  for (int running = n; running > 0;) {
    if (g_forward != 0 && forwarded < 2) {  // pass each of the first two signals on (the second exits at once)
      const int sig = g_forward;
      g_forward = 0;
      ++forwarded;
      for (const auto& w : workers)
        if (w.running) ::kill(w.pid, sig);
      if (result == 0) result = 128 + sig;
    }
    // Every worker that has ended since the last look, then the failures among them, the likeliest cause first: a
    // worker whose peer dies can die of it within the same moment (SIGPIPE on the peer's closed connection).
    std::vector<int> ended;
    for (int status = 0;;) {
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      for (int r = 0; r < n; ++r)
        if (workers[r].pid == pid) {
          workers[r].running = false;
          workers[r].status = status;
          --running;
          ended.push_back(r);
        }
    }
    std::vector<int> statuses;
    for (const int r : ended) statuses.push_back(workers[r].status);
    for (const int i : by_likely_cause(statuses)) {
      const int r = ended[i];
      const int status = workers[r].status;
      const bool failure = exit_code_of(status) != 0 && !(forwarded > 0 && exit_code_of(status) == result);
      if (failure && failed_rank < 0) {
        failed_rank = r;
        result = exit_code_of(status);
        const int64_t step = steps.step(r);
        spdlog::error("rank {} (pid {}) {} {}; stopping the other {} process{}", r, workers[r].pid,
                      describe_status(status), step >= 0 ? "at step " + std::to_string(step) : "before its first step",
                      running, running == 1 ? "" : "es");
        // The others usually fail on their own at once (their peer's connection closed); those still running
        // after a moment are asked to stop, then killed.
        term_at = Clock::now() + std::chrono::seconds(2);
        kill_at = term_at + std::chrono::seconds(grace_s);
      }
    }
    if (!ended.empty()) continue;
    if (failed_rank >= 0 && Clock::now() >= term_at) {
      for (const auto& w : workers)
        if (w.running) ::kill(w.pid, SIGTERM);
      term_at = Clock::now() + std::chrono::hours(1);
    }
    if (failed_rank >= 0 && Clock::now() >= kill_at) {
      for (int r = 0; r < n; ++r)
        if (workers[r].running) {
          spdlog::error("rank {} (pid {}) did not stop within {} s: killed", r, workers[r].pid, grace_s);
          ::kill(workers[r].pid, SIGKILL);
        }
      kill_at = Clock::now() + std::chrono::hours(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return result;
}

}  // namespace

std::vector<int> by_likely_cause(const std::vector<int>& statuses) {
  auto cause = [](int status) {  // 2: killed by a signal, 1: a failed exit, 0: success or a broken pipe
    if (WIFSIGNALED(status)) return WTERMSIG(status) == SIGPIPE ? 0 : 2;
    return WEXITSTATUS(status) != 0 ? 1 : 0;
  };
  std::vector<int> order(statuses.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return cause(statuses[a]) > cause(statuses[b]); });
  return order;
}

std::vector<std::string> without_nproc(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--nproc") {
      ++i;
      continue;
    }
    if (args[i].rfind("--nproc=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  return out;
}

int launch_local(const LocalLaunch& launch) {
  const int port = free_tcp_port();
  StepFile steps(launch.nproc);
  const std::vector<std::vector<std::string>> envs = worker_environments(launch.nproc, port, steps.path());

  struct sigaction sa {
  }, old_int{}, old_term{};
  sa.sa_handler = on_launcher_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  std::vector<Worker> workers = start_workers(launch.argv, envs);
  std::string pids;
  for (size_t r = 0; r < workers.size(); ++r) pids += (r ? ", " : "") + std::to_string(workers[r].pid);
  spdlog::info("started {} processes on this machine (pids {}), rendezvous 127.0.0.1:{}", launch.nproc, pids, port);
  const int result = watch_workers(workers, steps, launch.grace_s);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return result;
}

}  // namespace poslab
