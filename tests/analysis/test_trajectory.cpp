#include <gtest/gtest.h>

#include <filesystem>

#include "analysis/baselines.h"
#include "analysis/trajectory.h"
#include "test_util.h"
#include "util/error.h"
#include "util/npy.h"

namespace poslab {
namespace {

using test::TempDir;
using test::write_text;

// A run folder whose snapshots are given tables.
void fake_run(const TempDir& dir, const std::vector<std::pair<int64_t, torch::Tensor>>& snaps) {
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
  fake_run(dir, {{0, random_table(64, 32, 0.02, 1)},
                 {100, smooth_table(2)},
                 {200, random_table(64, 32, 0.02, 3)},  // falls back: emergence must be stable
                 {300, smooth_table(4)},
                 {400, smooth_table(5)}});
  const auto points = analyze_run(dir / "run");
  ASSERT_EQ(points.size(), 5u);
  EXPECT_EQ(points[0].train_loss, 1.5);
  const Verdict v = judge(points);
  EXPECT_TRUE(v.emerged);
  EXPECT_TRUE(v.low_rank);
  EXPECT_TRUE(v.smooth);
  ASSERT_TRUE(v.emerged_from.has_value());
  EXPECT_EQ(*v.emerged_from, 300);
  EXPECT_NE(v.summary.find("emerged from step 300"), std::string::npos) << v.summary;
  const auto j = verdict_json(v);
  EXPECT_EQ(j["emerged_from"], 300);
  EXPECT_EQ(trajectory_json(points).size(), 5u);
  const std::string csv = trajectory_csv(points);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 6);
  EXPECT_EQ(csv.rfind("step,train_loss,val_loss,k50,k90", 0), 0u) << csv.substr(0, 80);
}

TEST(Trajectory, NoiseStaysNoise) {
  TempDir dir;
  fake_run(dir, {{0, random_table(64, 32, 0.02, 1)}, {100, random_table(64, 32, 0.02, 2)}});
  const Verdict v = judge(analyze_run(dir / "run"));
  EXPECT_FALSE(v.emerged);
  EXPECT_FALSE(v.low_rank);
  EXPECT_FALSE(v.smooth);
  EXPECT_NE(v.summary.find("No stable smooth, low-rank structure"), std::string::npos) << v.summary;
  // Thresholds are configurable: with no margin at all, "smooth" only needs to beat the shuffled copy.
  VerdictThresholds lax;
  lax.smooth_margin = -1.0;
  EXPECT_TRUE(judge(analyze_run(dir / "run"), lax).smooth);
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
}

}  // namespace
}  // namespace poslab
