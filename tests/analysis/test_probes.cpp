// Wang & Chen's position probes: exact on a table that is a line in position, at chance on noise, and equal to
// NumPy on a slice of a real table (scripts/probes_numpy.py; the fixture holds the rows' shuffled order).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "analysis/analysis.h"
#include "analysis/probes.h"
#include "analysis/table_io.h"
#include "source_paths.h"
#include "test_tensors.h"
#include "test_util.h"

namespace poslab {
namespace {

std::string probe_fixture(const std::string& rel) { return poslab::test::source_dir() + "/tests/fixtures/" + rel; }

TEST(LiteratureProbes, ALineInPositionIsReadExactly) {
  torch::manual_seed(1);
  const int64_t P = 40;
  const auto v = torch::randn({1, 8}, torch::kFloat64);
  const auto W =
      torch::arange(P, torch::kFloat64).unsqueeze(1).matmul(v) + 1e-6 * torch::randn({P, 8}, torch::kFloat64);
  const LiteratureProbes p = literature_probes(W, 3);
  EXPECT_EQ(p.folds, 5);
  EXPECT_EQ(p.pairs, P * (P - 1));
  EXPECT_DOUBLE_EQ(p.absolute_mae, 0.0);
  EXPECT_GT(p.relative_accuracy, 0.97);
}

TEST(LiteratureProbes, NoiseIsAtChance) {
  torch::manual_seed(2);
  const LiteratureProbes p = literature_probes(torch::randn({60, 4}, torch::kFloat64), 5);
  EXPECT_GT(p.absolute_mae, 10.0);  // guessing the mean index: about P/4 = 15
  EXPECT_NEAR(p.relative_accuracy, 0.5, 0.08);
  // More pairs than max_pairs: a seeded sample of exactly max_pairs.
  EXPECT_EQ(literature_probes(torch::randn({60, 4}, torch::kFloat64), shuffle_permutation(60, 1), 9, 500).pairs, 500);
}

TEST(LiteratureProbes, TooFewRowsOrABadOrderAreErrors) {
  torch::manual_seed(3);
  EXPECT_NE(test::error_of([] {
              literature_probes(torch::randn({8, 4}, torch::kFloat64), 1);
            }).find("P >= 10"),
            std::string::npos);
  EXPECT_NE(test::error_of([] {
              literature_probes(torch::randn({12, 4}, torch::kFloat64), std::vector<int64_t>{0, 1});
            }).find("every row once"),
            std::string::npos);
  std::vector<int64_t> repeated(12, 0);
  EXPECT_NE(test::error_of([&] {
              literature_probes(torch::randn({12, 4}, torch::kFloat64), repeated);
            }).find("every row once"),
            std::string::npos);
}

TEST(LiteratureProbes, MatchNumPyOnARealTableAlsoWhenWiderThanTall) {
  std::ifstream in(probe_fixture("probes_numpy.json"));
  const auto e = nlohmann::json::parse(in);
  const auto rows = e.at("rows").get<std::vector<int64_t>>(), cols = e.at("columns").get<std::vector<int64_t>>();
  const auto W = read_npy_table(probe_fixture("runs/default_float32_seed1/wpe_step001500.npy"))
                     .slice(0, rows[0], rows[1])
                     .slice(1, cols[0], cols[1]);
  const LiteratureProbes p = literature_probes(W, e.at("order").get<std::vector<int64_t>>());
  EXPECT_EQ(p.pairs, e.at("pairs").get<int64_t>());
  EXPECT_DOUBLE_EQ(p.absolute_mae, e.at("absolute_mae").get<double>());
  EXPECT_DOUBLE_EQ(p.relative_accuracy, e.at("relative_accuracy").get<double>());

  // Wider than tall, the relative probe fits the rows' P coordinates (U S) instead of their d columns: the same
  // rows with 40 zero columns and turned by a random rotation have that shape and, exactly, NumPy's answer.
  const int64_t d = W.size(1) + 40;
  const auto padded = torch::cat({W, torch::zeros({W.size(0), 40}, torch::kFloat64)}, 1);
  const auto Q = std::get<0>(torch::linalg_qr(test::gaussian({d, d}, 5)));
  const auto wide = padded.matmul(Q);
  ASSERT_LT(wide.size(0), wide.size(1));
  const LiteratureProbes pw = literature_probes(wide, e.at("order").get<std::vector<int64_t>>());
  EXPECT_EQ(pw.pairs, e.at("pairs").get<int64_t>());
  EXPECT_DOUBLE_EQ(pw.relative_accuracy, e.at("relative_accuracy").get<double>());
}

}  // namespace
}  // namespace poslab
