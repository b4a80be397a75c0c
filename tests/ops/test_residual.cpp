// The fused float32 + bfloat16 residual add against LibTorch's mixed-dtype add, in value and gradient.
#include <gtest/gtest.h>

#include "ops/residual.h"

namespace poslab {
namespace {

TEST(Residual, Float32PlusBFloat16MatchesTheMixedDtypeAddExactly) {
  torch::manual_seed(0);
  const auto x = torch::randn({3, 5, 67}).requires_grad_(true);  // odd sizes: vector tails
  const auto y = torch::randn({3, 5, 67}).to(torch::kBFloat16).requires_grad_(true);
  const auto up = torch::randn({3, 5, 67});
  const auto ours = residual_add(x, y);
  ASSERT_EQ(ours.scalar_type(), torch::kFloat32);
  (ours * up).sum().backward();
  const auto gx = x.grad().clone(), gy = y.grad().clone();
  x.mutable_grad() = torch::Tensor();
  y.mutable_grad() = torch::Tensor();
  const auto ref = x + y;  // LibTorch promotes to float32 and rounds the gradient of y to bf16
  (ref * up).sum().backward();
  EXPECT_TRUE(torch::equal(ours, ref));
  EXPECT_TRUE(torch::equal(gx, x.grad()));
  ASSERT_EQ(gy.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(gy, y.grad()));
}

TEST(Residual, OtherDtypesAndShapesFallBackToPlainAdd) {
  const auto x = torch::randn({4, 6}), y = torch::randn({4, 6});
  EXPECT_TRUE(torch::equal(residual_add(x, y), x + y));
  const auto row = torch::randn({6}).to(torch::kBFloat16);  // broadcasting: LibTorch's add
  EXPECT_TRUE(torch::equal(residual_add(x, row), x + row));
  torch::NoGradGuard no_grad;
  const auto b = torch::randn({4, 6}).to(torch::kBFloat16);
  EXPECT_TRUE(torch::equal(residual_add(x, b), x + b));
  EXPECT_TRUE(torch::equal(residual_add(x.t(), b.t()), x.t() + b.t()));  // non-contiguous inputs
}

}  // namespace
}  // namespace poslab
