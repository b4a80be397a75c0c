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
  EXPECT_TRUE(torch::allclose(ours.to(torch::kFloat32), ref, 1.0 / 256, 1e-6))
      << (ours.to(torch::kFloat32) - ref).abs().max();
  EXPECT_TRUE(torch::allclose(x.grad().to(torch::kFloat32), wide.grad(), 1.0 / 128, 1e-5))
      << (x.grad().to(torch::kFloat32) - wide.grad()).abs().max();
}

TEST(Gelu, EveryBFloat16InputGivesTheFormulasValuesAndTheExactGeluToOneRounding) {
  // All 2^16 bf16 bit patterns (the kernel looks each up in a table). The tables hold the float formula's results:
  // the same values as bias_gelu with a zero bias, which computes the formula per element, forward and backward.
  // Both are within one bf16 rounding (2^-8 relative, 1e-7 absolute for the vanishing negative tail) of the exact
  // x Phi(x) and Phi(x) + x phi(x), computed in double with erfc (float32 torch::gelu cancels in the tail: LibTorch
  // 2.x's is 1 % off at x = -4.5). inf, -inf and nan as torch::gelu gives them (inf, nan, nan).
  const auto bits = torch::arange(0, 1 << 16, torch::kInt32).to(torch::kInt16);
  const auto x = bits.view(torch::kBFloat16).clone().requires_grad_(true);
  const auto ours = poslab::gelu(x);
  ours.backward(torch::ones_like(ours));
  const auto x2 = x.detach().view({-1, 1}).clone().requires_grad_(true);
  const auto formula = poslab::bias_gelu(x2, torch::zeros({1}));
  formula.backward(torch::ones_like(formula));
  const auto same = [](const torch::Tensor& a, const torch::Tensor& b) {  // equal values, nan where nan
    const auto fa = a.to(torch::kFloat32).view(-1), fb = b.to(torch::kFloat32).view(-1);
    return ((fa == fb) | (torch::isnan(fa) & torch::isnan(fb))).all().item<bool>();
  };
  EXPECT_TRUE(same(ours, formula));
  EXPECT_TRUE(same(x.grad(), x2.grad()));

  const auto xd = x.detach().to(torch::kFloat64);
  const auto finite = torch::isfinite(xd) & (xd.abs() < 1e30);
  const auto cdf = 0.5 * torch::erfc(-xd / std::sqrt(2.0));
  const auto exact = (xd * cdf).masked_select(finite);
  const auto exact_grad = (cdf + xd * torch::exp(-0.5 * xd * xd) / std::sqrt(2 * M_PI)).masked_select(finite);
  const auto y = ours.detach().to(torch::kFloat64).masked_select(finite);
  const auto g = x.grad().to(torch::kFloat64).masked_select(finite);
  EXPECT_TRUE(((y - exact).abs() <= exact.abs() / 256 + 1e-7).all().item<bool>()) << (y - exact).abs().max();
  EXPECT_TRUE(((g - exact_grad).abs() <= exact_grad.abs() / 256 + 1e-7).all().item<bool>())
      << (g - exact_grad).abs().max();
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
  // 600: a block and a tail; 350 rows: the bias gradient's chunks of rows, a whole one and a part
  const auto x = (torch::randn({5, 70, 600}) * 3).to(torch::kBFloat16).requires_grad_(true);
  const auto b = torch::randn({600}).requires_grad_(true);
  const auto up = torch::randn({5, 70, 600}).to(torch::kBFloat16);
  ASSERT_EQ(bias_gelu_grad_chunks(350), 2);
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
