#include "analysis/grid.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <random>

#include "analysis/analysis.h"
#include "analysis/metrics.h"
#include "util/error.h"

namespace poslab {

namespace {

struct Split {
  double row = 0, col = 0;
};

// Shares of the centred rows' sum of squares held by the grid-row means and the grid-column means.
Split two_way_split(const torch::Tensor& W, int64_t R, int64_t C) {
  const auto G = metrics::centred(W).view({R, C, -1});
  const double total = G.pow(2).sum().item<double>();
  if (total <= 0) return {};
  const double row = static_cast<double>(C) * G.mean(1).pow(2).sum().item<double>();
  const double col = static_cast<double>(R) * G.mean(0).pow(2).sum().item<double>();
  return {row / total, col / total};
}

}  // namespace

GridAnalysis grid_analysis(const torch::Tensor& W_in, int64_t R, int64_t C, uint64_t seed, int copies) {
  const auto W = W_in.detach().to(torch::kCPU, torch::kFloat64).contiguous();
  if (R < 2 || C < 2 || W.dim() != 2 || W.size(0) != R * C)
    throw Error(fmt::format("grid analysis: a {} x {} grid needs {} rows of patches, the table has {}", R, C, R * C,
                            W.dim() == 2 ? W.size(0) : 0),
                "check the model's config.json (image_size, patch_size) against its position table");
  GridAnalysis g;
  g.rows = R, g.cols = C, g.dims = W.size(1);
  g.cosine = cosine_matrix(W);
  const auto cos = g.cosine.accessor<double, 2>();
  g.similarity_by_offset = torch::zeros({2 * R - 1, 2 * C - 1}, torch::kFloat64);
  auto sim = g.similarity_by_offset.accessor<double, 2>();
  auto counts = torch::zeros({2 * R - 1, 2 * C - 1}, torch::kFloat64);
  auto cnt = counts.accessor<double, 2>();
  double h = 0, v = 0, all = 0;
  for (int64_t r1 = 0; r1 < R; ++r1)
    for (int64_t c1 = 0; c1 < C; ++c1)
      for (int64_t r2 = 0; r2 < R; ++r2)
        for (int64_t c2 = 0; c2 < C; ++c2) {
          const double x = cos[r1 * C + c1][r2 * C + c2];
          sim[r2 - r1 + R - 1][c2 - c1 + C - 1] += x;
          cnt[r2 - r1 + R - 1][c2 - c1 + C - 1] += 1;
          if (r1 == r2 && c2 == c1 + 1) h += x;
          if (c1 == c2 && r2 == r1 + 1) v += x;
          if (r1 != r2 || c1 != c2) all += x;
        }
  g.similarity_by_offset /= counts;
  g.horizontal_cosine = h / static_cast<double>(R * (C - 1));
  g.vertical_cosine = v / static_cast<double>((R - 1) * C);
  g.mean_cosine = all / static_cast<double>(R * C * (R * C - 1));
  const Split s = two_way_split(W, R, C);
  g.row_share = s.row, g.col_share = s.col;
  g.interaction_share = std::max(0.0, 1.0 - s.row - s.col);
  std::mt19937_64 rng(seed);
  std::vector<int64_t> perm(static_cast<size_t>(R * C));
  for (int k = 0; k < copies; ++k) {
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    std::shuffle(perm.begin(), perm.end(), rng);
    const Split t = two_way_split(W.index_select(0, torch::tensor(perm)), R, C);
    g.shuffled_row_share += t.row / copies;
    g.shuffled_col_share += t.col / copies;
  }
  g.shuffle_copies = copies;
  return g;
}

nlohmann::json to_json(const GridAnalysis& g) {
  std::vector<std::vector<double>> sim;
  const auto a = g.similarity_by_offset.accessor<double, 2>();
  for (int64_t i = 0; i < g.similarity_by_offset.size(0); ++i) {
    sim.emplace_back();
    for (int64_t j = 0; j < g.similarity_by_offset.size(1); ++j) sim.back().push_back(a[i][j]);
  }
  return {{"grid", {g.rows, g.cols}},
          {"row_share", g.row_share},
          {"col_share", g.col_share},
          {"interaction_share", g.interaction_share},
          {"shuffle_copies", g.shuffle_copies},
          {"shuffled_row_share", g.shuffled_row_share},
          {"shuffled_col_share", g.shuffled_col_share},
          {"horizontal_cosine", g.horizontal_cosine},
          {"vertical_cosine", g.vertical_cosine},
          {"mean_cosine", g.mean_cosine},
          {"similarity_by_offset", sim}};
}

std::string grid_text(const GridAnalysis& g) {
  const auto a = g.similarity_by_offset.accessor<double, 2>();
  const int64_t r0 = g.rows - 1, c0 = g.cols - 1;
  std::string s = fmt::format(
      "  2-D grid {} x {}: row part {:.1f} % + column part {:.1f} % of the variance, {:.1f} % neither (shuffled "
      "patches: {:.1f} % + {:.1f} %)\n",
      g.rows, g.cols, 100 * g.row_share, 100 * g.col_share, 100 * g.interaction_share, 100 * g.shuffled_row_share,
      100 * g.shuffled_col_share);
  s += fmt::format("  cosine of neighbours: same row {:.3f}, same column {:.3f}; any two patches {:.3f}\n",
                   g.horizontal_cosine, g.vertical_cosine, g.mean_cosine);
  s += "  mean cosine by (Δrow, Δcol), Δ = 0..3:\n";
  for (int64_t dr = 0; dr <= std::min<int64_t>(3, r0); ++dr) {
    s += fmt::format("    Δrow {}:", dr);
    for (int64_t dc = 0; dc <= std::min<int64_t>(3, c0); ++dc) s += fmt::format(" {:>7.3f}", a[r0 + dr][c0 + dc]);
    s += "\n";
  }
  return s;
}

}  // namespace poslab
