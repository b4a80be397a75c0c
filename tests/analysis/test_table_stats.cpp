#include <gtest/gtest.h>

#include "analysis/snapshot_hook.h"
#include "analysis/table_stats.h"

namespace poslab {
namespace {

TEST(TableStats, RowNormsKnownAnswer) {
  auto w = torch::tensor({{3.0, 4.0}, {0.0, 0.0}, {1.0, 0.0}});
  auto n = row_norms(w);
  EXPECT_EQ(n.scalar_type(), torch::kFloat64);
  EXPECT_DOUBLE_EQ(n[0].item<double>(), 5.0);
  EXPECT_DOUBLE_EQ(n[1].item<double>(), 0.0);
  EXPECT_DOUBLE_EQ(n[2].item<double>(), 1.0);
}

TEST(TableStats, AdjacentCosinesKnownAnswers) {
  auto same = torch::ones({5, 3});
  EXPECT_TRUE(torch::allclose(adjacent_cosines(same), torch::ones({4}, torch::kFloat64)));
  auto eye = torch::eye(4);  // orthonormal rows
  EXPECT_TRUE(torch::allclose(adjacent_cosines(eye), torch::zeros({3}, torch::kFloat64)));
  auto flip = torch::tensor({{1.0, 0.0}, {-1.0, 0.0}});
  EXPECT_DOUBLE_EQ(adjacent_cosines(flip)[0].item<double>(), -1.0);
  EXPECT_THROW(adjacent_cosines(torch::ones({1, 3})), c10::Error);
}

TEST(TableStats, SnapshotHookSummarises) {
  const std::string s = analyze_snapshot(torch::ones({4, 4}), SnapshotInfo{});
  EXPECT_NE(s.find("mean row norm 2.0000"), std::string::npos) << s;
  EXPECT_NE(s.find("adjacent cosine 1.0000"), std::string::npos) << s;
}

}  // namespace
}  // namespace poslab
