// The fused bf16 GELU against torch::gelu computed in float on the same inputs, in value and gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/gelu.h"
#include "ops/gelu_kernel.h"

namespace poslab {
namespace {

TEST(Gelu, ErfApproximationIsWithin5e7OfStdErf) {
  float worst = 0.0f;
  for (float x = -8.0f; x <= 8.0f; x += 1.0f / 1024) worst = std::max(worst, std::fabs(erf_approx(x) - std::erf(x)));
  EXPECT_LT(worst, 5e-7f);  // the formula's 1.5e-7 plus float rounding
  EXPECT_EQ(erf_approx(0.0f), 0.0f);
  EXPECT_FLOAT_EQ(erf_approx(-30.0f), -1.0f);
  EXPECT_FLOAT_EQ(erf_approx(30.0f), 1.0f);
}

TEST(Gelu, BFloat16ValueAndGradientMatchTorchGeluInFloatRoundedOnce) {
  torch::manual_seed(0);
  // Odd length (vector tails) and a wide range: large negative inputs give 0, large positive ones x.
  const auto x = (torch::randn({3, 1001}) * 4).to(torch::kBFloat16).requires_grad_(true);
  const auto up = torch::randn({3, 1001}).to(torch::kBFloat16);
  const auto ours = poslab::gelu(x);
  ASSERT_EQ(ours.scalar_type(), torch::kBFloat16);
  ours.backward(up);
  ASSERT_EQ(x.grad().scalar_type(), torch::kBFloat16);

  const auto wide = x.detach().to(torch::kFloat32).requires_grad_(true);
  const auto ref = torch::gelu(wide);
  ref.backward(up.to(torch::kFloat32));
  // One bf16 rounding of each result: relative error <= 2^-8.
  EXPECT_TRUE(torch::allclose(ours.to(torch::kFloat32), ref, 1.0 / 256, 1e-6)) << (ours.to(torch::kFloat32) - ref).abs().max();
  EXPECT_TRUE(torch::allclose(x.grad().to(torch::kFloat32), wide.grad(), 1.0 / 128, 1e-5))
      << (x.grad().to(torch::kFloat32) - wide.grad()).abs().max();
}

TEST(Gelu, EveryBFloat16InputGivesTorchGeluInFloatRoundedOnceAndItsDerivative) {
  // All 2^16 bf16 bit patterns (the kernel looks each up in a table): finite inputs within one bf16 rounding of
  // torch::gelu in float, and the gradient of a unit upstream within one rounding of gelu'(x); inf, -inf and nan
  // as torch::gelu gives them (inf, nan, nan).
  const auto bits = torch::arange(0, 1 << 16, torch::kInt32).to(torch::kInt16);
  const auto x = bits.view(torch::kBFloat16).clone().requires_grad_(true);
  const auto ours = poslab::gelu(x);
  ours.backward(torch::ones_like(ours));
  const auto wide = x.detach().to(torch::kFloat32);
  const auto finite = torch::isfinite(wide) & (wide.abs() < 1e30);
  const auto w = wide.masked_select(finite).requires_grad_(true);
  const auto ref = torch::gelu(w);
  ref.backward(torch::ones_like(ref));
  const auto y = ours.to(torch::kFloat32).masked_select(finite), g = x.grad().to(torch::kFloat32).masked_select(finite);
  EXPECT_TRUE(torch::allclose(y, ref, 1.0 / 256, 1e-30)) << (y - ref).abs().max();
  EXPECT_TRUE(torch::allclose(g, w.grad(), 1.0 / 128, 1e-6)) << (g - w.grad()).abs().max();
  const auto at = [&](float v) { return poslab::gelu(torch::full({1}, v).to(torch::kBFloat16)).item<float>(); };
  EXPECT_EQ(at(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(at(-std::numeric_limits<float>::infinity())));
  EXPECT_TRUE(std::isnan(at(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(at(0.0f), 0.0f);
  EXPECT_EQ(at(1.0f), 0.83984375f);  // 0.8413447 rounded to bf16
}

TEST(Gelu, OtherDtypesAndNoGradUseTheSameValues) {
  const auto x = torch::linspace(-6, 6, 97);
  EXPECT_TRUE(torch::equal(poslab::gelu(x), torch::gelu(x)));  // float32: torch::gelu itself
  torch::NoGradGuard no_grad;
  const auto b = x.to(torch::kBFloat16);
  EXPECT_TRUE(torch::allclose(poslab::gelu(b).to(torch::kFloat32), torch::gelu(x), 1.0 / 128, 1e-2));
  // A non-contiguous input is read correctly.
  const auto m = torch::randn({8, 6}).to(torch::kBFloat16);
  EXPECT_TRUE(torch::equal(poslab::gelu(m.t()), poslab::gelu(m.t().contiguous())));
}

TEST(Gelu, BiasFoldedInMatchesGeluOfTheFloatSumAndGivesTheBiasItsGradient) {
  torch::manual_seed(2);
  const auto x = (torch::randn({5, 7, 600}) * 3).to(torch::kBFloat16).requires_grad_(true);  // 600: a block and a tail
  const auto b = torch::randn({600}).requires_grad_(true);
  const auto up = torch::randn({5, 7, 600}).to(torch::kBFloat16);
  const auto ours = bias_gelu(x, b);
  ASSERT_EQ(ours.scalar_type(), torch::kBFloat16);
  ASSERT_EQ(ours.sizes(), x.sizes());
  ours.backward(up);
  ASSERT_EQ(b.grad().scalar_type(), torch::kFloat32);

  const auto wide = x.detach().to(torch::kFloat32).requires_grad_(true);
  const auto wb = b.detach().clone().requires_grad_(true);
  const auto ref = torch::gelu(wide + wb);
  ref.backward(up.to(torch::kFloat32));
  EXPECT_TRUE(torch::allclose(ours.to(torch::kFloat32), ref, 1.0 / 256, 1e-6));
  EXPECT_TRUE(torch::allclose(x.grad().to(torch::kFloat32), wide.grad(), 1.0 / 128, 1e-5));
  // The bias gradient is summed in float from unrounded terms: float-sum accuracy, not bf16's.
  EXPECT_TRUE(torch::allclose(b.grad(), wb.grad(), 1e-4, 1e-4)) << (b.grad() - wb.grad()).abs().max();

  // Other dtypes: torch::gelu(x + bias) itself.
  const auto xf = torch::randn({3, 4}), bf = torch::randn({4});
  EXPECT_TRUE(torch::equal(bias_gelu(xf, bf), torch::gelu(xf + bf)));
}

}  // namespace
}  // namespace poslab
