// The end of a run in the terminal: known answers on a made trajectory, and the lines of a real tiny run.
#include "report/run_ending.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "report/figures.h"
#include "report/report.h"
#include "run/run_files.h"
#include "run/run_folder.h"
#include "test_util.h"
#include "train/tiny_run.h"
#include "train/trainer.h"
#include "util/fs.h"

namespace poslab {
namespace {

using test::TempDir;

TEST(RunEnding, SparklinesScaleToEightHeights) {
  EXPECT_EQ(sparkline({0, 1.0 / 7, 2.0 / 7, 3.0 / 7, 4.0 / 7, 5.0 / 7, 6.0 / 7, 1}, 0, 1), "▁▂▃▄▅▆▇█");
  EXPECT_EQ(sparkline({-5, 0.5, 9}, 0, 1), "▁▅█");  // clamped; 0.5 rounds up to the fifth
  EXPECT_EQ(sparkline({NAN, 3, 3}, 3, 3), "▁▁▁");   // no range, no number: the floor
  EXPECT_EQ(sparkline({}, 0, 1), "");
}

TEST(RunEnding, UnicodeFollowsTheLocaleAsTheTerminalSeesIt) {
  const char* saved[3];
  const char* names[3] = {"LC_ALL", "LC_CTYPE", "LANG"};
  std::string keep[3];
  for (int i = 0; i < 3; ++i) {
    saved[i] = std::getenv(names[i]);
    if (saved[i]) keep[i] = saved[i];
  }
  ::unsetenv("LC_ALL");
  ::unsetenv("LC_CTYPE");
  ::setenv("LANG", "en_US.UTF-8", 1);
  EXPECT_TRUE(terminal_takes_unicode());
  ::setenv("LC_ALL", "C", 1);  // LC_ALL wins
  EXPECT_FALSE(terminal_takes_unicode());
  ::setenv("LC_ALL", "C.utf8", 1);
  EXPECT_TRUE(terminal_takes_unicode());
  ::unsetenv("LC_ALL");
  ::unsetenv("LANG");
  EXPECT_FALSE(terminal_takes_unicode());
  for (int i = 0; i < 3; ++i)
    if (saved[i])
      ::setenv(names[i], keep[i].c_str(), 1);
    else
      ::unsetenv(names[i]);
}

TrajectoryPoint point(int64_t step, int rank, double share, double z) {
  TrajectoryPoint p;
  p.step = step;
  p.analysis.noise.signal_rank = rank;
  p.analysis.noise.signal_share = share;
  p.analysis.shuffle_control.z = z;
  return p;
}

TEST(RunEnding, QuotesTheFirstTheEmergenceAndTheLastSnapshot) {
  TempDir dir;
  const std::vector<TrajectoryPoint> points = {point(0, 0, 0, -1.1), point(100, 0, 0, 0.5), point(200, 4, 0.59, 8.3),
                                               point(300, 6, 0.78, 8.7)};
  Verdict v;
  v.outcome = Outcome::emerged;
  v.emerged_from = 200;
  v.summary = "Smooth, low-rank structure emerged from step 200.";
  const std::string text = run_ending_text(dir.str(), points, v, true);
  EXPECT_NE(text.find(dir.str() + ": 4 snapshots, steps 0..300\n"), std::string::npos) << text;
  EXPECT_NE(text.find("verdict (emerged): Smooth, low-rank structure emerged from step 200.\n"), std::string::npos);
  EXPECT_NE(text.find("  at steps 0, 200 (emergence) and 300:\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  components above the noise floor  0 → 4 → 6           ▁▁▆█\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  their share of the variance       0 % → 59 % → 78 %   ▁▁▅▆\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  adjacent cosine, z over shuffled  -1.1 → 8.3 → 8.7    ▁▂██\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("report:"), std::string::npos) << "no report was written";
  EXPECT_EQ(text.find("layer-0"), std::string::npos) << "no snapshot of the model was written";

  // Present from the start, from a step after the first (an extended table's run): that step quoted as such.
  v.outcome = Outcome::present_from_start;
  v.emerged_from.reset();
  v.present_from = 200;
  const std::string present = run_ending_text(dir.str(), points, v, true);
  EXPECT_NE(present.find("  at steps 0, 200 (present from) and 300:\n"), std::string::npos) << present;
  v.present_from.reset();

  // Without Unicode: arrows in ASCII, no sparklines. Not formed: the first and the last snapshots only.
  v.outcome = Outcome::not_formed;
  v.emerged_from.reset();
  v.summary = "No structure formed.";
  const std::string plain = run_ending_text(dir.str(), points, v, false);
  EXPECT_NE(plain.find("  at steps 0 and 300:\n"), std::string::npos) << plain;
  EXPECT_NE(plain.find("  components above the noise floor  0 -> 6\n"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("▁"), std::string::npos) << plain;
}

// The trajectory figure's data file, column by column as its header and script name them.
TEST(RunEnding, TheTrajectoryDataFileHoldsEachNumberInItsColumn) {
  TrajectoryPoint p = point(300, 6, 0.78, 8.7);
  p.analysis.k90 = 11;
  p.analysis.smooth.adjacent_cosine = 0.25;
  p.analysis.shuffle_control.mean = 0.125;
  p.analysis.shuffle_control.sd = 0.0625;
  p.analysis.effective_rank = 3.5;
  MetricsRecord r;
  r.step = 300;
  r.loss = 2.5;
  r.train_loss = 2.25;
  r.val_loss = NAN;
  const Figure f = trajectory_figure({p}, {r});
  EXPECT_EQ(f.data.at("trajectory.dat"),
            "# step k90 signal_rank signal_share adjacent_cosine shuffled_mean shuffled_sd effective_rank\n"
            "300 11 6 0.78 0.25 0.125 0.0625 3.5\n");
  EXPECT_EQ(f.data.at("loss.dat"), "# step batch_loss eval_train_loss eval_val_loss\n300 2.5 2.25 NaN\n");
}

// A real tiny run: its verdict, numbers, layer 0's heads and where its report is.
TEST(RunEnding, ATinyRunEndsWithItsVerdictHeadsAndPages) {
  TempDir dir;
  const TrainSummary s = train(test::tiny_run(dir, "ending", 20));
  write_report_of_finished_run(s.run_dir);
  ::setenv("LC_ALL", "C.UTF-8", 1);
  const std::string text = run_ending_of(s.run_dir);
  ::unsetenv("LC_ALL");
  EXPECT_NE(text.find("verdict ("), std::string::npos) << text;
  EXPECT_NE(text.find("  components above the noise floor  "), std::string::npos) << text;
  EXPECT_NE(text.find("layer-0 heads at step 20: "), std::string::npos) << text;
  // "(on text too)" only when each head is of its position-only kind on text: the same counts of kinds, heads
  // swapped, are written out
  const RunFolder run(s.run_dir);
  nlohmann::json usage = *read_snapshot_usage(run, 20);
  ASSERT_TRUE(usage.contains("data_attention"));
  const size_t H = usage["attention_kernels"]["heads"].size();
  ASSERT_GE(H, 2u);
  for (size_t h = 0; h < H; ++h) {
    usage["attention_kernels"]["heads"][h]["kind"] = h % 2 ? "local" : "uniform";
    usage["data_attention"]["heads"][h]["kind"] = h % 2 ? "local" : "uniform";
  }
  write_file_atomic(run.snapshot_usage(20), usage.dump() + "\n");
  EXPECT_NE(run_ending_of(s.run_dir).find(" (on text too)\n"), std::string::npos) << run_ending_of(s.run_dir);
  for (size_t h = 0; h < H; ++h) usage["data_attention"]["heads"][h]["kind"] = h % 2 ? "uniform" : "local";
  write_file_atomic(run.snapshot_usage(20), usage.dump() + "\n");
  EXPECT_NE(run_ending_of(s.run_dir).find(" | on text: "), std::string::npos) << run_ending_of(s.run_dir);
  EXPECT_NE(text.find("report: " + s.run_dir + "/report/index.html\n"), std::string::npos) << text;
  EXPECT_NE(text.find("watch:  " + s.run_dir + "/report/watch.html\n"), std::string::npos) << text;
  EXPECT_EQ(run_ending_of(dir / "no-such-run"), "");
}

}  // namespace
}  // namespace poslab
