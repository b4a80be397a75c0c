#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "analysis/baselines.h"
#include "analysis/metric_list.h"
#include "analysis/table_io.h"
#include "analysis/trajectory.h"
#include "formats/npy.h"
#include "source_paths.h"
#include "test_util.h"
#include "util/error.h"
#include "util/wrap.h"

namespace poslab {
namespace {

using test::TempDir;
using test::write_text;

// A run folder whose snapshots are given tables.
void trajectory_run(const TempDir& dir, const std::vector<std::pair<int64_t, torch::Tensor>>& snaps) {
  std::string index;
  for (const auto& [step, W] : snaps) {
    auto w = W.to(torch::kFloat32).contiguous();
    const std::string name = "wpe_step" + std::to_string(step) + ".npy";
    write_text(dir / ("run/snapshots/" + name), npy_bytes(w.data_ptr<float>(), w.size(0), w.size(1)));
    index += "{\"step\":" + std::to_string(step) + ",\"file\":\"" + name + "\",\"train_loss\":1.5}\n";
  }
  write_text(dir / "run/snapshots/index.jsonl", index);
}

torch::Tensor smooth_table(uint64_t seed) {  // low rank and smooth: a slow circle plus a little noise
  auto ang = torch::arange(64, torch::kFloat64) * (2 * M_PI / 128);
  auto W = torch::zeros({64, 32}, torch::kFloat64);
  W.select(1, 0).copy_(torch::cos(ang));
  W.select(1, 1).copy_(torch::sin(ang));
  return W + random_table(64, 32, 0.01, seed);
}

TEST(Trajectory, VerdictNeedsStableStructureAgainstInitAndShuffle) {
  TempDir dir;
  trajectory_run(dir, {{0, random_table(64, 32, 0.02, 1)},
                       {100, smooth_table(2)},
                       {200, random_table(64, 32, 0.02, 3)},  // falls back: emergence must be stable
                       {300, smooth_table(4)},
                       {400, smooth_table(5)}});
  const auto points = analyze_run(dir / "run");
  ASSERT_EQ(points.size(), 5u);
  EXPECT_EQ(points[0].train_loss, 1.5);
  const Verdict v = judge(points);
  EXPECT_EQ(v.outcome, Outcome::emerged);
  EXPECT_TRUE(v.emerged);
  EXPECT_TRUE(v.low_rank);
  EXPECT_TRUE(v.smooth);
  EXPECT_FALSE(v.present_at_start);
  ASSERT_TRUE(v.emerged_from.has_value());
  EXPECT_EQ(*v.emerged_from, 300);
  // The sentence carries the numbers: the components above the floor, step 0's none, the shuffled copies.
  EXPECT_NE(v.summary.find("emerged from step 300: there 2 components above the noise floor hold"), std::string::npos)
      << v.summary;
  EXPECT_NE(v.summary.find("(step 0: none)"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("for 100 shuffled copies"), std::string::npos) << v.summary;
  const auto j = verdict_json(v, points);
  EXPECT_EQ(j["emerged_from"], 300);
  EXPECT_EQ(j["outcome"], "emerged");
  EXPECT_EQ(j["half_change_step"]["signal_share"], 100);  // the first smooth snapshot already moved all the way
  EXPECT_EQ(trajectory_json(points).size(), 5u);
  const std::string csv = trajectory_csv(points);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 6);
  EXPECT_EQ(csv.rfind("step,train_loss,val_loss,signal_rank,signal_share,noise_sigma,k50,k90", 0), 0u)
      << csv.substr(0, 80);
}

// A table that turns twice round a circle over its rows: the verdict says from which step it holds one to the end.
TEST(Trajectory, TheVerdictSaysFromWhichStepTheTableHoldsACircle) {
  auto circle = [](uint64_t seed) {  // period 32 over 64 rows: two turns
    auto ang = torch::arange(64, torch::kFloat64) * (2 * M_PI / 32);
    auto W = torch::zeros({64, 32}, torch::kFloat64);
    W.select(1, 0).copy_(torch::cos(ang));
    W.select(1, 1).copy_(torch::sin(ang));
    return W + random_table(64, 32, 0.01, seed);
  };
  TempDir dir;
  trajectory_run(dir, {{0, random_table(64, 32, 0.02, 1)},
                       {100, circle(2)},
                       {200, smooth_table(3)},  // smooth, but half a turn: no circle, so the circle counts from 300
                       {300, circle(4)},
                       {400, circle(5)}});
  const auto points = analyze_run(dir / "run");
  ASSERT_EQ(points.back().analysis.circles.size(), 1u);
  EXPECT_TRUE(points[2].analysis.circles.empty());
  const Verdict v = judge(points);
  ASSERT_TRUE(v.circle_from.has_value());
  EXPECT_EQ(*v.circle_from, 300);
  EXPECT_NE(v.summary.find(" A circle from step 300: at step 400, components 1 and 2 turn in quadrature with a "
                           "period of 32.0 positions"),
            std::string::npos)
      << v.summary;
  EXPECT_EQ(verdict_json(v, points)["circle_from"], 300);
  // A run without one says nothing of circles.
  TempDir none;
  trajectory_run(none, {{0, random_table(64, 32, 0.02, 1)}, {100, smooth_table(2)}});
  const Verdict w = judge(analyze_run(none / "run"));
  EXPECT_FALSE(w.circle_from.has_value());
  EXPECT_EQ(w.summary.find("circle"), std::string::npos) << w.summary;
  EXPECT_TRUE(verdict_json(w)["circle_from"].is_null());
}

// The verdict names the helix's slow component, or the three components a helix was turned apart within (the planted
// helices of tests/fixtures: the second's ramp holds a circle coordinate's variance).
TEST(Trajectory, TheVerdictNamesTheHelixAndHowItWasFound) {
  for (const auto& [file, words] : std::vector<std::pair<std::string, std::string>>{
           {"planted_helix_96x24.npy", ", a helix with component 1 (96.8 % with the circle)."},
           {"planted_helix_even_96x24.npy",
            ", a helix turned apart within components 1, 2 and 3 (together 96.8 %)."}}) {
    SCOPED_TRACE(file);
    const torch::Tensor helix = read_npy_table(test::source_dir() + "/tests/fixtures/" + file);
    TempDir dir;
    trajectory_run(dir, {{0, random_table(96, 24, 0.02, 1)}, {100, helix}, {200, helix}});
    const Verdict v = judge(analyze_run(dir / "run"));
    ASSERT_TRUE(v.circle_from.has_value());
    EXPECT_NE(v.summary.find(words), std::string::npos) << v.summary;
  }
}

// "smooth" is z >= smooth_z: a threshold exactly at a snapshot's z counts it smooth, one just above does not.
TEST(Trajectory, AThresholdEqualToTheZIsSmooth) {
  TrajectoryPoint p;
  p.analysis = analyze_table(smooth_table(2), "smooth");
  const double z = p.analysis.shuffle_control.z;
  ASSERT_TRUE(std::isfinite(z) && z > 0) << z;
  VerdictThresholds t;
  t.smooth_z = z;
  const Verdict at = judge({p}, t);
  EXPECT_TRUE(at.smooth);
  ASSERT_TRUE(at.smooth_from.has_value());
  EXPECT_EQ(*at.smooth_from, 0);
  t.smooth_z = std::nextafter(z, INFINITY);
  EXPECT_FALSE(judge({p}, t).smooth);
}

TEST(Trajectory, NoiseStaysNoise) {
  TempDir dir;
  trajectory_run(dir, {{0, random_table(64, 32, 0.02, 1)}, {100, random_table(64, 32, 0.02, 2)}});
  const Verdict v = judge(analyze_run(dir / "run"));
  EXPECT_EQ(v.outcome, Outcome::not_formed);
  EXPECT_FALSE(v.emerged);
  EXPECT_FALSE(v.low_rank);
  EXPECT_FALSE(v.smooth);
  EXPECT_NE(v.summary.find("No stable smooth, low-rank structure"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("no component above the noise floor"), std::string::npos) << v.summary;
  // Thresholds are configurable: with z >= -100, "smooth" holds for anything.
  VerdictThresholds lax;
  lax.smooth_z = -100;
  EXPECT_TRUE(judge(analyze_run(dir / "run"), lax).smooth);
}

// Negative controls: order destroyed, or no structure at all, is never "emerged".
TEST(Trajectory, ShuffledStructureIsLowRankButNotSmooth) {
  TempDir dir;
  trajectory_run(dir, {{0, random_table(64, 32, 0.02, 1)},
                       {100, shuffle_rows(smooth_table(2), 7)},
                       {200, shuffle_rows(smooth_table(3), 8)}});
  const Verdict v = judge(analyze_run(dir / "run"));
  EXPECT_EQ(v.outcome, Outcome::not_formed) << v.summary;
  EXPECT_TRUE(v.low_rank) << "shuffling keeps the spectrum";
  EXPECT_FALSE(v.smooth) << v.summary;
}

// A table that was smooth and low rank before training (fixed sinusoidal, GPT-2's own rows, an extended table or
// --init-from) is "present from the start", not "emerged".
TEST(Trajectory, StructureAtStepZeroIsPresentNotEmerged) {
  const std::string path = poslab::test::source_dir() + "/tests/fixtures/gpt2_wpe_rows0-63.npy";
  const torch::Tensor gpt2 = select_rows(read_npy_table(path), "1:64");
  const torch::Tensor sinus = synthetic_table("sinusoidal", 128, 128, 0);
  for (const auto& [name, W] :
       std::vector<std::pair<std::string, torch::Tensor>>{{"gpt2", gpt2}, {"sinusoidal", sinus}}) {
    TempDir dir;
    trajectory_run(dir, {{0, W}, {100, W}, {200, W}});
    const auto points = analyze_run(dir / "run");
    const Verdict v = judge(points);
    EXPECT_EQ(v.outcome, Outcome::present_from_start) << name << ": " << v.summary;
    EXPECT_FALSE(v.emerged) << name;
    EXPECT_TRUE(v.present_at_start) << name;
    EXPECT_TRUE(v.low_rank && v.smooth) << name;
    EXPECT_EQ(verdict_json(v, points)["outcome"], "present from the start");
    EXPECT_NE(v.summary.find("present from the start"), std::string::npos) << v.summary;
  }
  // Lost during training: present at step 0, noise at the end.
  TempDir dir;
  trajectory_run(dir, {{0, sinus}, {100, random_table(128, 128, 0.02, 3)}});
  const Verdict lost = judge(analyze_run(dir / "run"));
  EXPECT_EQ(lost.outcome, Outcome::not_formed);
  EXPECT_NE(lost.summary.find("it was present at the first snapshot and was lost"), std::string::npos) << lost.summary;
}

// Snapshots of real runs (tests/fixtures/runs/README in tests/fixtures/README.md): the default config in float32
// (seed 1) forms its table; the small config with model.wpe_init_std 0.2 does not move its noise in 1500 steps.
std::vector<std::pair<int64_t, torch::Tensor>> fixture_run(const std::string& name, const std::vector<int64_t>& steps) {
  std::vector<std::pair<int64_t, torch::Tensor>> snaps;
  for (int64_t step : steps) {
    char file[64];
    std::snprintf(file, sizeof file, "wpe_step%06lld.npy", static_cast<long long>(step));
    snaps.emplace_back(step, read_npy_table(poslab::test::source_dir() + "/tests/fixtures/runs/" + name + "/" + file));
  }
  return snaps;
}

TEST(Trajectory, RealRunsAreJudgedByWhatTheyShow) {
  TempDir dir;
  const auto formed = fixture_run("default_float32_seed1", {0, 400, 800, 1500});
  trajectory_run(dir, formed);
  const auto points = analyze_run(dir / "run");
  const Verdict v = judge(points);
  EXPECT_EQ(v.outcome, Outcome::emerged) << v.summary;
  ASSERT_TRUE(v.emerged_from.has_value()) << v.summary;
  EXPECT_EQ(*v.emerged_from, 800) << v.summary;
  EXPECT_EQ(points.front().analysis.noise.signal_rank, 0);
  EXPECT_GT(points.back().analysis.noise.signal_share, 0.6);
  EXPECT_GT(points.back().analysis.shuffle_control.z, 10);

  // Its last table with the rows shuffled: the same spectrum, no order.
  TempDir shuffled;
  trajectory_run(shuffled, {formed.front(), {1500, shuffle_rows(formed.back().second, 3)}});
  const Verdict s = judge(analyze_run(shuffled / "run"));
  EXPECT_EQ(s.outcome, Outcome::not_formed) << s.summary;
  EXPECT_TRUE(s.low_rank);
  EXPECT_FALSE(s.smooth);

  TempDir loud;
  trajectory_run(loud, fixture_run("init_std0.2", {0, 700, 1500}));
  const Verdict n = judge(analyze_run(loud / "run"));
  EXPECT_EQ(n.outcome, Outcome::not_formed) << n.summary;
  EXPECT_FALSE(n.low_rank || n.smooth) << n.summary;
}

TEST(Trajectory, HalfChangeStepIsTheFirstSnapshotPastHalfway) {
  // signal share goes 0 -> ~0 -> high -> high: half its change is reached at step 200.
  TempDir dir;
  trajectory_run(dir, {{0, random_table(64, 32, 0.02, 1)},
                       {100, random_table(64, 32, 0.02, 2)},
                       {200, smooth_table(3)},
                       {300, smooth_table(4)}});
  const auto points = analyze_run(dir / "run");
  const auto hc = half_change_steps(points);
  ASSERT_EQ(hc.size(), headline_metrics().size());
  for (const auto& h : hc)
    if (h.key == "signal_share" || h.key == "adjacent_cosine") {
      ASSERT_TRUE(h.step.has_value()) << h.key;
      EXPECT_EQ(*h.step, 200) << h.key;
    }
  // A metric that does not change has no half-change step.
  TempDir same;
  trajectory_run(same, {{0, smooth_table(3)}, {100, smooth_table(3)}});
  for (const auto& h : half_change_steps(analyze_run(same / "run"))) EXPECT_FALSE(h.step.has_value()) << h.key;
}

// The report's middle snapshot is the one nearest the middle step: a stop's extra snapshot, before or after it,
// changes nothing; of two as near, the earlier.
TEST(Trajectory, TheMiddleSnapshotIsNearestTheMiddleStep) {
  const auto at = [](std::vector<int64_t> steps) {
    std::vector<TrajectoryPoint> points(steps.size());
    for (size_t i = 0; i < steps.size(); ++i) points[i].step = steps[i];
    return middle_snapshot(points).step;
  };
  EXPECT_EQ(at({0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000}), 500);
  EXPECT_EQ(at({0, 100, 200, 300, 400, 500, 600, 700, 737, 800, 900, 1000}), 500);
  EXPECT_EQ(at({0, 100, 137, 200, 300, 400, 500, 600, 700, 800, 900, 1000}), 500);
  EXPECT_EQ(at({0, 100, 200, 300}), 100);
  EXPECT_EQ(at({0, 40, 60, 100}), 40);
  EXPECT_EQ(at({0, 90, 100}), 90);
  EXPECT_EQ(at({7}), 7);
}

// The console's tables: three groups, each with its title, header, rows and half-way row, within 80 columns; a long
// run shows 21 snapshots evenly spaced with the emergence step among them, and says where the rest are.
TEST(Trajectory, TheConsoleTablesFitEightyColumns) {
  std::vector<TrajectoryPoint> points(41);
  for (size_t i = 0; i < points.size(); ++i) {
    points[i].step = static_cast<int64_t>(i) * 50;
    points[i].val_loss = 8.0 - 0.1 * static_cast<double>(i);
    points[i].analysis.noise.signal_rank = static_cast<int>(i / 4);
    points[i].analysis.noise.signal_share = static_cast<double>(i) / 40;
  }
  const std::string text = trajectory_tables(points, 1150, 80);
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    const size_t nl = text.find('\n', at);
    lines.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  size_t halves = 0, headers = 0, step_rows = 0;
  bool emergence = false, first = false, last = false;
  for (const std::string& line : lines) {
    EXPECT_LE(display_width(line), 80u) << line;
    halves += line.rfind("half-way ", 0) == 0;
    headers += line.rfind("    step ", 0) == 0;
    if (line.size() > 8 && line.find_first_not_of(' ') < 8 && std::isdigit(static_cast<unsigned char>(line[7]))) {
      ++step_rows;
      const std::string step = line.substr(line.find_first_not_of(' '),
                                           line.find(' ', line.find_first_not_of(' ')) - line.find_first_not_of(' '));
      emergence = emergence || step == "1150";
      first = first || step == "0";
      last = last || step == "2000";
    }
  }
  EXPECT_EQ(halves, 3u) << text;
  EXPECT_EQ(headers, 3u) << text;
  EXPECT_EQ(step_rows, 3u * 22) << text;  // 21 evenly spaced (1150 is not one of them) and the emergence step
  EXPECT_TRUE(emergence && first && last) << text;
  EXPECT_NE(text.find("    step  val loss signal rk sig share       k90  eff rank"), std::string::npos) << text;
  EXPECT_NE(text.find("22 of the 41 snapshots shown; every one is in trajectory.csv."), std::string::npos) << text;
  // The signal rank and share reach half their change at step 1000; metrics that stay put have none ("-"); the val
  // loss is not a headline metric (blank).
  EXPECT_NE(text.find("\nhalf-way                1000      1000         -         -\n"), std::string::npos) << text;
  // A short run shows every snapshot, and no line about the rest.
  points.resize(5);
  EXPECT_EQ(trajectory_tables(points, std::nullopt, 80).find("snapshots shown"), std::string::npos);
}

TEST(Trajectory, TheSnapshotSpanCountsInWords) {
  std::vector<TrajectoryPoint> points(1);
  points[0].step = 7;
  EXPECT_EQ(snapshot_span(points), "1 snapshot, step 7");
  points.resize(3);
  points[2].step = 300;
  points[0].step = 0;
  EXPECT_EQ(snapshot_span(points), "3 snapshots, steps 0..300");
}

TEST(Trajectory, EmptyAndBrokenRunFoldersAreClearErrors) {
  TempDir dir;
  std::filesystem::create_directories(dir / "empty");
  auto message = [](const std::string& path) {
    try {
      analyze_run(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(dir / "empty").find("no snapshots"), std::string::npos);
  write_text(dir / "blank/snapshots/index.jsonl", "");
  EXPECT_NE(message(dir / "blank").find("index is empty"), std::string::npos);
  write_text(dir / "lost/snapshots/index.jsonl", "{\"step\":0,\"file\":\"wpe_step000000.npy\"}\n");
  EXPECT_NE(message(dir / "lost").find("wpe_step000000.npy"), std::string::npos);
  write_text(dir / "junk/snapshots/index.jsonl", "garbage\n{\"step\":0,\"file\":\"x.npy\"}\n");
  EXPECT_NE(message(dir / "junk").find("index.jsonl:1: not a snapshot record"), std::string::npos);
  TempDir mixed;
  trajectory_run(mixed, {{0, smooth_table(1)}, {10, smooth_table(2).narrow(0, 0, 48)}});
  EXPECT_NE(message(mixed / "run")
                .find("wpe_step10.npy: a 48 x 32 table where the run's first snapshot "
                      "(wpe_step0.npy) is 64 x 32"),
            std::string::npos)
      << message(mixed / "run");
}

}  // namespace
}  // namespace poslab
