#include "util/signals.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

namespace poslab {
namespace {

volatile std::sig_atomic_t g_signal = 0;
constexpr const char* kTrainingMessage =
    "\nstopping after this step (a checkpoint is being written); signal again to exit at once\n";
std::atomic<const char*> g_message{kTrainingMessage};  // lock-free: read in the handler

extern "C" void on_stop_signal(int sig) {
  if (g_signal != 0) _exit(128 + sig);  // second signal: stop now
  g_signal = sig;
  const char* msg = g_message.load();
  const ssize_t n = ::write(STDERR_FILENO, msg, std::strlen(msg));
  (void)n;
}

}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // A write past the file-size limit (ulimit -f) then fails with EFBIG and is reported like a full disk,
  // instead of killing the process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
}

void set_stop_message(const char* message) { g_message.store(message != nullptr ? message : kTrainingMessage); }

bool stop_requested() { return g_signal != 0; }
int stop_signal() { return static_cast<int>(g_signal); }

}  // namespace poslab
