// The progress bar's line: its parts at known steps, and a line that never wraps, whatever the terminal's width; on a
// terminal, drawn and erased.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "train/progress.h"

namespace poslab {
namespace {

TEST(Progress, TheLineAtKnownSteps) {
  EXPECT_EQ(Progress::line(0, 0, 1000, "?", 80), "[..............................]   0% step 0/1000 ETA ?");
  EXPECT_EQ(Progress::line(400, 0, 1000, "1m02s", 80), "[############..................]  40% step 400/1000 ETA 1m02s");
  EXPECT_EQ(Progress::line(1000, 0, 1000, "0s", 80), "[##############################] 100% step 1000/1000 ETA 0s");
  EXPECT_EQ(Progress::line(5, 0, 20, "3s", 80, "batch"), "[#######.......................]  25% batch 5/20 ETA 3s");
  // A resumed run counts from its first step: half of 500 → 1500.
  EXPECT_EQ(Progress::line(1000, 500, 1500, "9s", 80), "[###############...............]  50% step 1000/1500 ETA 9s");
}

TEST(Progress, TheLineFitsANarrowTerminal) {
  const std::string text = " 40% step 400/1000 ETA 1m02s";  // 28 characters
  // The bar shrinks to what the width leaves (the last column stays empty), and is left out below 10 characters...
  EXPECT_EQ(Progress::line(400, 0, 1000, "1m02s", 50), "[#######...........] " + text);
  EXPECT_EQ(Progress::line(400, 0, 1000, "1m02s", 50).size(), 49u);
  EXPECT_EQ(Progress::line(400, 0, 1000, "1m02s", 42), "[####......] " + text);
  EXPECT_EQ(Progress::line(400, 0, 1000, "1m02s", 41), text.substr(1));
  // ... and the text is cut to the terminal.
  EXPECT_EQ(Progress::line(400, 0, 1000, "1m02s", 12), "40% step 40");
  for (int columns = 1; columns <= 120; ++columns)
    EXPECT_LT(Progress::line(123456, 0, 9999999, "10h00m", columns).size(), static_cast<size_t>(columns)) << columns;
}

// The ETA counts from the first draw: a first step of 60 s (step 0's eval and snapshot, the kernel paths measured)
// then 2 s a step gives 2 s a step for the rest, not 80 s over 11 steps.
TEST(Progress, TheEtaCountsFromTheFirstDraw) {
  Progress p(0, 1000, /*draw=*/false);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(p.eta(1, t0 + std::chrono::seconds(60)), "?");
  EXPECT_EQ(p.eta(11, t0 + std::chrono::seconds(80)), "32m58s");  // 20 s for 10 steps, 989 to go
  EXPECT_EQ(p.eta(1000, t0 + std::chrono::seconds(2058)), "0s");
  // A resumed run's first draw is at its own first step.
  Progress resumed(500, 1500, false);
  EXPECT_EQ(resumed.eta(500, t0), "?");
  EXPECT_EQ(resumed.eta(600, t0 + std::chrono::seconds(50)), "7m30s");  // 0.5 s a step, 900 to go
}

// On a terminal (a pseudo-terminal here, as stderr) the bar is drawn, and erased when it goes out of scope: an error
// thrown past it (a full disk during eval) starts its own line. One never drawn writes nothing.
TEST(Progress, OnATerminalTheBarIsDrawnAndErasedWhenItGoes) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  const int terminal = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(terminal, 0);
  winsize size{};
  size.ws_col = 80;
  size.ws_row = 24;
  ASSERT_EQ(::ioctl(terminal, TIOCSWINSZ, &size), 0);
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(terminal, STDERR_FILENO);
  {
    Progress bar(0, 10, true, "batch");
    bar.update(3);
  }
  { Progress never(0, 10, true, "batch"); }
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(terminal);
  std::string screen;  // what the terminal got: all of it was written before the writer closed
  char buf[512];
  for (pollfd p{master, POLLIN, 0}; ::poll(&p, 1, 1000) > 0 && (p.revents & POLLIN) != 0;) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;
    screen.append(buf, static_cast<size_t>(n));
  }
  ::close(master);
  const std::string erase = "\r\033[K";
  EXPECT_EQ(screen.rfind(erase, 0), 0u) << screen;
  EXPECT_NE(screen.find("]  30% batch 3/10 ETA ?"), std::string::npos) << screen;
  ASSERT_GE(screen.size(), erase.size());
  EXPECT_EQ(screen.substr(screen.size() - erase.size()), erase) << "the bar left on the screen: " << screen;
  EXPECT_EQ(screen.find(erase, erase.size()), screen.size() - erase.size()) << "drawn once, erased once: " << screen;
}

}  // namespace
}  // namespace poslab
