// The 2-D grid of a vision table: tables of known structure (a row part only, a row part plus a column part, noise).
#include <gtest/gtest.h>

#include "analysis/grid.h"
#include "util/error.h"

using namespace poslab;

namespace {

// W_rc = f(r) + g(c), with f and g in orthogonal halves of the width: no interaction.
torch::Tensor separable(int64_t R, int64_t C, int64_t d, double col_scale) {
  torch::manual_seed(3);
  auto f = torch::zeros({R, d}, torch::kFloat64), g = torch::zeros({C, d}, torch::kFloat64);
  f.slice(1, 0, d / 2).copy_(torch::randn({R, d / 2}, torch::kFloat64));
  g.slice(1, d / 2, d).copy_(col_scale * torch::randn({C, d - d / 2}, torch::kFloat64));
  return (f.view({R, 1, d}) + g.view({1, C, d})).reshape({R * C, d});
}

}  // namespace

TEST(Grid, ARowPlusColumnTableSplitsWithNoInteraction) {
  const auto W = separable(4, 5, 16, 1.0);
  const GridAnalysis g = grid_analysis(W, 4, 5);
  EXPECT_NEAR(g.row_share + g.col_share, 1.0, 1e-9);
  EXPECT_NEAR(g.interaction_share, 0.0, 1e-9);
  EXPECT_GT(g.row_share, 0.1);
  EXPECT_GT(g.col_share, 0.1);
  // Shuffled patches lose the split: about (R − 1)/(RC − 1) and (C − 1)/(RC − 1).
  EXPECT_LT(g.shuffled_row_share + g.shuffled_col_share, 0.6);
  // Offset (0, 0) is a patch with itself.
  EXPECT_NEAR(g.similarity_by_offset[3][4].item<double>(), 1.0, 1e-12);
  EXPECT_EQ(g.similarity_by_offset.size(0), 7);
  EXPECT_EQ(g.similarity_by_offset.size(1), 9);
}

TEST(Grid, ARowOnlyTableIsAllRowPartAndItsColumnsAreIdentical) {
  const auto W = separable(3, 4, 8, 0.0);
  const GridAnalysis g = grid_analysis(W, 3, 4);
  EXPECT_NEAR(g.row_share, 1.0, 1e-9);
  EXPECT_NEAR(g.col_share, 0.0, 1e-9);
  EXPECT_NEAR(g.horizontal_cosine, 1.0, 1e-12);  // patches of one row are the same vector
  for (int64_t dc = 0; dc < 7; ++dc) EXPECT_NEAR(g.similarity_by_offset[2][dc].item<double>(), 1.0, 1e-12);
}

TEST(Grid, SimilarityByOffsetIsTheMeanOverThePairs) {
  torch::manual_seed(5);
  const auto W = torch::randn({6, 3}, torch::kFloat64);  // a 2 x 3 grid
  const GridAnalysis g = grid_analysis(W, 2, 3);
  auto cos = [&](int64_t i, int64_t j) { return (W[i].dot(W[j]) / (W[i].norm() * W[j].norm())).item<double>(); };
  // (Δr, Δc) = (1, −1): pairs (0,1)->(1,0) and (0,2)->(1,1), rows 1->3 and 2->4.
  EXPECT_NEAR(g.similarity_by_offset[2][1].item<double>(), (cos(1, 3) + cos(2, 4)) / 2, 1e-12);
  EXPECT_NEAR(g.vertical_cosine, (cos(0, 3) + cos(1, 4) + cos(2, 5)) / 3, 1e-12);
  EXPECT_NEAR(g.horizontal_cosine, (cos(0, 1) + cos(1, 2) + cos(3, 4) + cos(4, 5)) / 4, 1e-12);
  double pairs = 0;  // any two patches, a patch with itself not among them
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t k = 0; k < 6; ++k)
      if (i != k) pairs += cos(i, k) / 30;
  EXPECT_NEAR(g.mean_cosine, pairs, 1e-12);
  EXPECT_NEAR(grid_analysis(torch::eye(6, torch::kFloat64), 2, 3).mean_cosine, 0.0, 1e-12) << "orthogonal patches";
  const auto j = to_json(g);
  EXPECT_EQ(j["similarity_by_offset"].size(), 3u);
  EXPECT_NE(grid_text(g).find("2-D grid 2 x 3"), std::string::npos);
}

TEST(Grid, AGridThatDoesNotFitTheRowsIsAnError) {
  EXPECT_THROW(grid_analysis(torch::zeros({10, 4}), 3, 3), Error);
  EXPECT_THROW(grid_analysis(torch::zeros({3, 4}), 1, 3), Error);
}
