// The stop handlers of util/signals.h: a first signal asks for a stop, a second ends the process.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <string>

#include "test_util.h"
#include "util/signals.h"

namespace poslab {
namespace {

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
