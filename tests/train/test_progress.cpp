// The progress bar's line: its parts at known steps, and a line that never wraps, whatever the terminal's width.
#include <gtest/gtest.h>

#include "train/progress.h"

namespace poslab {
namespace {

TEST(Progress, TheLineAtKnownSteps) {
  EXPECT_EQ(Progress::line(0, 0, 1000, "?", 80), "[..............................]   0% step 0/1000 ETA ?");
  EXPECT_EQ(Progress::line(400, 0, 1000, "1m02s", 80), "[############..................]  40% step 400/1000 ETA 1m02s");
  EXPECT_EQ(Progress::line(1000, 0, 1000, "0s", 80), "[##############################] 100% step 1000/1000 ETA 0s");
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

}  // namespace
}  // namespace poslab
