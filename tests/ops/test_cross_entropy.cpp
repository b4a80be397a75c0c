// The fused cross-entropy against LibTorch's own, in value and gradient, float32 and bfloat16.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/cross_entropy.h"
#include "ops/cross_entropy_kernel.h"

namespace poslab {
namespace {

namespace F = torch::nn::functional;

TEST(CrossEntropy, ExpMatchesStdExpOnTheWholeRange) {
  float worst = 0;
  for (float x = -87.0f; x <= 0.0f; x += 0.001f) {
    const float want = std::exp(x);
    worst = std::max(worst, std::abs(exp_nonpositive(x) - want) / want);
  }
  EXPECT_LT(worst, 3e-7f);
  EXPECT_EQ(exp_nonpositive(0.0f), 1.0f);
  EXPECT_LT(exp_nonpositive(-1000.0f), 1e-37f);
}

TEST(CrossEntropy, Float32ValueAndGradientMatchLibTorch) {
  torch::manual_seed(0);
  const auto logits = (torch::randn({300, 517}) * 4).requires_grad_(true);  // odd sizes: vector tails
  const auto targets = torch::randint(0, 517, {300}, torch::kLong);
  const auto ours = fused_cross_entropy(logits, targets);
  (ours * 0.5).backward();
  const auto g_ours = logits.grad().clone();
  logits.mutable_grad() = torch::Tensor();
  const auto ref = F::cross_entropy(logits, targets);
  (ref * 0.5).backward();
  EXPECT_EQ(ours.scalar_type(), torch::kFloat32);
  EXPECT_EQ(ours.dim(), 0);
  EXPECT_NEAR(ours.item<double>(), ref.item<double>(), 1e-5);
  EXPECT_TRUE(torch::allclose(g_ours, logits.grad(), 1e-5, 1e-8)) << (g_ours - logits.grad()).abs().max();
}

TEST(CrossEntropy, BFloat16ReadsTheTableAsItIsAndGivesABFloat16Gradient) {
  torch::manual_seed(1);
  const auto logits = (torch::randn({64, 2048}) * 3).to(torch::kBFloat16).requires_grad_(true);
  const auto targets = torch::randint(0, 2048, {64}, torch::kLong);
  const auto ours = fused_cross_entropy(logits, targets);
  ours.backward();
  // The reference: the float32 loss of the same bf16 values, its gradient rounded to bf16 once.
  const auto wide = logits.detach().to(torch::kFloat32).requires_grad_(true);
  const auto ref = F::cross_entropy(wide, targets);
  ref.backward();
  EXPECT_NEAR(ours.item<double>(), ref.item<double>(), 1e-5);
  ASSERT_EQ(logits.grad().scalar_type(), torch::kBFloat16);
  const auto diff = (logits.grad().to(torch::kFloat32) - wide.grad().to(torch::kBFloat16).to(torch::kFloat32)).abs();
  EXPECT_LE(diff.max().item<float>(), 1e-6f);
}

TEST(CrossEntropy, NoGradientWithoutGradModeAndBadTargetsAreErrors) {
  const auto logits = torch::randn({4, 10}).requires_grad_(true);
  {
    torch::NoGradGuard no_grad;
    const auto loss = fused_cross_entropy(logits, torch::tensor({1, 2, 3, 4}));
    EXPECT_FALSE(loss.requires_grad());
    EXPECT_NEAR(loss.item<double>(), F::cross_entropy(logits, torch::tensor({1, 2, 3, 4})).item<double>(), 1e-5);
  }
  EXPECT_THROW(fused_cross_entropy(logits, torch::tensor({1, 2, 3, 10})), c10::Error);
  EXPECT_THROW(fused_cross_entropy(logits, torch::tensor({1, 2, -1, 0})), c10::Error);
  EXPECT_THROW(fused_cross_entropy(logits.to(torch::kFloat64), torch::tensor({1, 2, 3, 4})), c10::Error);
}

}  // namespace
}  // namespace poslab
