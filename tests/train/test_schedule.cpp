#include <gtest/gtest.h>

#include <spdlog/fmt/fmt.h>

#include <cmath>

#include "config/config.h"
#include "train/schedule.h"

namespace poslab {
namespace {

TEST(Schedule, WarmupThenCosineToMinLr) {
  TrainConfig t;
  t.lr = 1e-3;
  t.min_lr = 1e-4;
  t.warmup_steps = 100;
  t.max_steps = 1100;
  EXPECT_DOUBLE_EQ(lr_at(0, t), 1e-3 * 1 / 101);
  EXPECT_DOUBLE_EQ(lr_at(49, t), 1e-3 * 50 / 101);
  EXPECT_DOUBLE_EQ(lr_at(100, t), 1e-3);                          // peak right after warmup
  EXPECT_NEAR(lr_at(600, t), 1e-4 + 0.5 * (1e-3 - 1e-4), 1e-12);  // halfway: cos(pi/2) = 0
  EXPECT_NEAR(lr_at(350, t), 1e-4 + 0.5 * (1 + std::cos(M_PI / 4)) * 9e-4, 1e-12);
  EXPECT_DOUBLE_EQ(lr_at(1100, t), 1e-4);
  EXPECT_DOUBLE_EQ(lr_at(5000, t), 1e-4);
  for (int s = 101; s < 1100; ++s) EXPECT_LE(lr_at(s, t), lr_at(s - 1, t)) << "not monotone at " << s;
}

TEST(Schedule, AWarmupAsLongAsTheRunIsNamedWithWhatItDoes) {
  TrainConfig t;
  t.lr = 1e-3;
  t.warmup_steps = 100;
  t.max_steps = 1100;
  EXPECT_EQ(schedule_warning(t), "");
  t.max_steps = 60;  // README's short runs with the default warmup
  EXPECT_EQ(schedule_warning(t),
            "train.warmup_steps 100 is not below train.max_steps 60: the learning rate climbs for the whole run, "
            "ends at 5.9e-04 of train.lr 1.0e-03, and never decays; for a short run set a shorter warmup "
            "(--set train.warmup_steps=6)");
  t.max_steps = 100;
  EXPECT_NE(schedule_warning(t), "");
  t.max_steps = 101;
  EXPECT_EQ(schedule_warning(t), "");
}

// The longest warmup a config holds (2^31 − 1 steps): the rate climbs from lr / 2^31, never below 0.
TEST(Schedule, TheLongestWarmupStaysPositive) {
  TrainConfig t;
  t.lr = 1e-3;
  t.warmup_steps = 2147483647;
  t.max_steps = 20;
  EXPECT_DOUBLE_EQ(lr_at(0, t), 1e-3 / 2147483648.0);
  EXPECT_GT(lr_at(19, t), lr_at(0, t));
}

// A resumed run given a longer train.max_steps: the cosine is laid over the new length, and the rate where it goes on
// jumps up from where the run had decayed to; said with both rates. Another lr is asked for, not said.
TEST(Schedule, ALongerResumedRunSaysTheRateJumps) {
  TrainConfig before;
  before.lr = 1e-3;
  before.min_lr = 1e-4;
  before.warmup_steps = 2;
  before.max_steps = 20;
  TrainConfig now = before;
  now.max_steps = 40;
  EXPECT_EQ(resumed_schedule_warning(before, now, 20),
            fmt::format("the learning rate goes on at {:.1e} at step 20, where the run's schedule had 1.0e-04: "
                        "train.max_steps 20 -> 40 lays the schedule anew over the whole run, so the rate jumps up at "
                        "once",
                        lr_at(20, now)));
  EXPECT_EQ(resumed_schedule_warning(before, before, 20), "");
  TrainConfig faster = before;
  faster.lr = 2e-3;
  EXPECT_EQ(resumed_schedule_warning(before, faster, 10), "");
  // Within the warmup both schedules climb alike.
  TrainConfig longer = before;
  longer.max_steps = 30;
  EXPECT_EQ(resumed_schedule_warning(before, longer, 1), "");
}

TEST(Schedule, NoWarmup) {
  TrainConfig t;
  t.lr = 2.0;
  t.min_lr = 0.0;
  t.warmup_steps = 0;
  t.max_steps = 10;
  EXPECT_DOUBLE_EQ(lr_at(0, t), 2.0);
  EXPECT_NEAR(lr_at(5, t), 1.0, 1e-12);
}

}  // namespace
}  // namespace poslab
