// The chunked head + cross-entropy against the head product followed by the fused cross-entropy, in value and
// gradient (for x and for the tied weight), float32 and bfloat16, and with more rows than one chunk holds.
#include <gtest/gtest.h>

#include "ops/cross_entropy.h"
#include "ops/head_loss.h"
#include "util/kernel_paths.h"

namespace poslab {
namespace {

struct HeadLossGrads {
  torch::Tensor loss, dx, dw;
};

// V = 1029 (odd: vector tails), N = 700 rows: several chunks in both dtypes, the last one partial.
HeadLossGrads head_loss_case(bool fused, torch::ScalarType dtype, double weight) {
  torch::manual_seed(3);
  const auto x = torch::randn({700, 48}).to(dtype).requires_grad_(true);
  const auto w = (torch::randn({1029, 48}) * 0.5).requires_grad_(true);
  const auto targets = torch::randint(0, 1029, {700}, torch::kLong);
  torch::Tensor loss;
  if (fused) {
    loss = head_cross_entropy(x, w, targets, weight);
  } else {
    loss = fused_cross_entropy(torch::mm(x, w.to(dtype).t()), targets, weight);
  }
  (loss * 0.5).backward();
  return {loss.detach(), x.grad(), w.grad()};
}

TEST(HeadLoss, Float32MatchesTheProductThenTheFusedCrossEntropy) {
  const HeadLossGrads a = head_loss_case(true, torch::kFloat32, 1.0), b = head_loss_case(false, torch::kFloat32, 1.0);
  EXPECT_NEAR(a.loss.item<double>(), b.loss.item<double>(), 1e-5);
  EXPECT_TRUE(torch::allclose(a.dx, b.dx, 1e-5, 1e-8)) << (a.dx - b.dx).abs().max();
  EXPECT_TRUE(torch::allclose(a.dw, b.dw, 1e-5, 1e-8)) << (a.dw - b.dw).abs().max();
}

TEST(HeadLoss, BFloat16MatchesTheAutocastPathAndScalesWithTheWeight) {
  const HeadLossGrads a = head_loss_case(true, torch::kBFloat16, 0.25),
                      b = head_loss_case(false, torch::kBFloat16, 0.25);
  ASSERT_EQ(a.dx.scalar_type(), torch::kBFloat16);
  ASSERT_EQ(a.dw.scalar_type(), torch::kFloat32);
  EXPECT_NEAR(a.loss.item<double>(), b.loss.item<double>(), 1e-4);
  // Same bf16 products of the same bf16 operands; the summation may differ (on a CPU without bf16 hardware
  // poslab sums in float while LibTorch's emulation may round partial sums): entries near zero are compared
  // against the scale of the gradient. dx sums 1029 terms that mostly cancel (its entries are ~100x smaller than
  // the terms), so rounding partial sums moves it by more than a bf16 step of its largest entry.
  const auto dx = a.dx.to(torch::kFloat32), dx_ref = b.dx.to(torch::kFloat32);
  EXPECT_TRUE(torch::allclose(dx, dx_ref, 1.0 / 64, dx_ref.abs().max().item<double>() / 16))
      << (dx - dx_ref).abs().max();
  EXPECT_TRUE(torch::allclose(a.dw, b.dw, 1.0 / 64, b.dw.abs().max().item<double>() / 64)) << (a.dw - b.dw).abs().max();
  const HeadLossGrads one = head_loss_case(true, torch::kBFloat16, 1.0);
  EXPECT_NEAR(a.loss.item<double>(), 0.25 * one.loss.item<double>(), 1e-5);
}

// bf16 activations with the products widened to float (run.kernels bf16_products=float, a CPU without bf16
// instructions): the weight is rounded to bf16 as the activations are, the products summed in float.
TEST(HeadLoss, WidenedBf16ProductsMultiplyTheRoundedWeight) {
  KernelPaths p = kernel_paths();
  p.bf16_products = "float";
  KernelPathsGuard guard(p);
  torch::manual_seed(3);
  const auto x = torch::randn({700, 48}).to(torch::kBFloat16);
  const auto w = torch::randn({1029, 48}) * 0.5;
  const auto t = torch::randint(0, 1029, {700}, torch::kLong);
  torch::NoGradGuard no_grad;
  const double ours = head_cross_entropy(x, w, t).item<double>();
  const auto xf = x.to(torch::kFloat32);
  const double want =
      fused_cross_entropy(torch::mm(xf, w.to(torch::kBFloat16).to(torch::kFloat32).t()).to(torch::kBFloat16), t)
          .item<double>();
  const double unrounded = fused_cross_entropy(torch::mm(xf, w.t()).to(torch::kBFloat16), t).item<double>();
  EXPECT_NEAR(ours, want, 1e-6 * want);
  EXPECT_GT(std::abs(unrounded - want), 1e-5 * want) << "the check cannot tell the rounding apart";
}

TEST(HeadLoss, WithoutGradientOnlyTheLossIsComputed) {
  torch::manual_seed(4);
  const auto x = torch::randn({300, 16}), w = torch::randn({77, 16});
  const auto targets = torch::randint(0, 77, {300}, torch::kLong);
  torch::NoGradGuard no_grad;
  EXPECT_NEAR(head_cross_entropy(x, w, targets).item<double>(),
              fused_cross_entropy(torch::mm(x, w.t()), targets).item<double>(), 1e-5);
}

TEST(HeadLoss, BadShapesTypesAndTargetsAreErrors) {
  const auto x = torch::randn({4, 8}), w = torch::randn({10, 8});
  const auto t = torch::zeros({4}, torch::kLong);
  EXPECT_THROW(head_cross_entropy(x, torch::randn({10, 7}), t), c10::Error);
  EXPECT_THROW(head_cross_entropy(x, w, torch::zeros({5}, torch::kLong)), c10::Error);
  EXPECT_THROW(head_cross_entropy(x.to(torch::kFloat64), w, t), c10::Error);
  EXPECT_THROW(head_cross_entropy(x, w.to(torch::kBFloat16), t), c10::Error);
  EXPECT_THROW(head_cross_entropy(x, w, torch::full({4}, 10, torch::kLong)), c10::Error);
}

}  // namespace
}  // namespace poslab
