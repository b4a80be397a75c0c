// A folder's lock: "PID HOST" in a file; a live holder on this host is an error, a dead one's lock is taken over, one
// held on another host is left to its owner.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string>

#include "test_util.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/lock.h"
#include "util/signals.h"

namespace poslab {
namespace {

using test::error_of;
using test::TempDir;
namespace fs = std::filesystem;

std::string this_host() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

TEST(Lock, HoldsThePidAndHostAndIsGoneWithItsHolder) {
  TempDir dir;
  const std::string path = dir / "lock";
  {
    const RunLock lock(path);
    EXPECT_EQ(read_file(path), std::to_string(::getpid()) + " " + this_host() + "\n");
    EXPECT_EQ(error_of([&] { RunLock again(path, "sweep"); }),
              dir.str() + ": another sweep (pid " + std::to_string(::getpid()) + ") is using this sweep folder (" +
                  path + ") | wait for it to finish or stop it; if no such process runs, delete " + path);
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(Lock, ADeadHoldersLockIsTakenOverAndAnotherHostsIsLeftToIt) {
  TempDir dir;
  const std::string path = dir / "lock";
  const pid_t child = ::fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);  // a pid no process has now
  test::write_text(path, std::to_string(child) + " " + this_host() + "\n");
  {
    test::CapturedLog log;
    const RunLock lock(path);
    EXPECT_NE(
        log.str().find(path + ": stale lock of pid " + std::to_string(child) + " (no such process); taking it over"),
        std::string::npos)
        << log.str();
    EXPECT_EQ(read_file(path), std::to_string(::getpid()) + " " + this_host() + "\n");
  }
  // On a shared file system the pid means nothing here: the lock stays, its host named.
  test::write_text(path, "4242 otherhost\n");
  EXPECT_EQ(error_of([&] { RunLock lock(path); }), dir.str() + ": locked by pid 4242 on host otherhost (" + path +
                                                       ") | if that trainer is gone, delete " + path);
  EXPECT_EQ(read_file(path), "4242 otherhost\n");
}

// The first SIGTERM or SIGINT asks for a stop (the step finishes: stop_requested, the signal kept, the message on
// stderr); a second ends the process at once, with 128 + that signal; SIGXFSZ is ignored. In a child process: the
// handlers stay out of the other tests.
TEST(Signals, TheFirstSignalAsksForAStopAndASecondEndsTheProcessAtOnce) {
  const test::ChildRun child = test::in_child(
      [](int fd) {
        install_stop_handlers();
        struct sigaction xfsz {};
        ::sigaction(SIGXFSZ, nullptr, &xfsz);
        char state[64];  // no allocation in the child of a process with threads: a fixed buffer
        const int was_requested = stop_requested() ? 1 : 0, was_signal = stop_signal();
        ::raise(SIGTERM);
        const int n =
            std::snprintf(state, sizeof state, "[%d %d|%d %d|%s]\n", was_requested, was_signal,
                          stop_requested() ? 1 : 0, stop_signal(), xfsz.sa_handler == SIG_IGN ? "ign" : "dfl");
        (void)!::write(fd, state, static_cast<size_t>(n));
        ::raise(SIGINT);  // ends the process: in_child's _exit(0) is not reached
      },
      /*stderr_too=*/true);
  ASSERT_TRUE(WIFEXITED(child.status)) << "status " << child.status << ", stderr: " << child.out;
  EXPECT_EQ(WEXITSTATUS(child.status), 128 + SIGINT) << child.out;
  EXPECT_EQ(child.out,
            "\nstopping after this step (a checkpoint is being written); signal again to exit at once\n"
            "[0 0|1 " +
                std::to_string(SIGTERM) + "|ign]\n");
}

}  // namespace
}  // namespace poslab
