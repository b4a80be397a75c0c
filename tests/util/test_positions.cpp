#include <gtest/gtest.h>

#include <cmath>

#include "util/positions.h"

namespace poslab {
namespace {

TEST(Positions, SinusoidalTableHasKnownValues) {
  const auto pe = sinusoidal_table(4, 6);
  ASSERT_EQ(pe.sizes(), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(pe.scalar_type(), torch::kFloat64);
  EXPECT_NEAR(pe[0][0].item<double>(), 0.0, 1e-15);
  EXPECT_NEAR(pe[0][1].item<double>(), 1.0, 1e-15);
  EXPECT_NEAR(pe[1][0].item<double>(), std::sin(1.0), 1e-14);
  EXPECT_NEAR(pe[3][1].item<double>(), std::cos(3.0), 1e-14);
  EXPECT_NEAR(pe[2][2].item<double>(), std::sin(2.0 / std::pow(10000.0, 2.0 / 6)), 1e-14);
  EXPECT_NEAR(pe[2][5].item<double>(), std::cos(2.0 / std::pow(10000.0, 4.0 / 6)), 1e-14);
}

TEST(Positions, SinusoidalTableWithAnOddWidthEndsWithASine) {
  const auto pe = sinusoidal_table(3, 5);
  EXPECT_NEAR(pe[2][4].item<double>(), std::sin(2.0 / std::pow(10000.0, 4.0 / 5)), 1e-14);
}

}  // namespace
}  // namespace poslab
