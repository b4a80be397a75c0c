// bf16 products widened to float against autocast's own bf16 linear (oneDNN), in value and gradient.
#include <gtest/gtest.h>

#include "ops/autocast.h"
#include "ops/bf16_products.h"

namespace poslab {
namespace {

// |a - b| <= rtol |b| + atol elementwise, reporting the worst entry.
::testing::AssertionResult close(const torch::Tensor& a, const torch::Tensor& b, double rtol, double atol) {
  const auto fa = a.to(torch::kFloat32), fb = b.to(torch::kFloat32);
  if (torch::allclose(fa, fb, rtol, atol)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "max |diff| " << (fa - fb).abs().max().item<double>();
}

torch::Tensor rounded(const torch::Tensor& t) { return t.to(torch::kBFloat16).to(torch::kFloat32); }

struct Linear {
  torch::Tensor y, gx, gw, gb;
};

// kind 0: widened_linear; 1: autocast's bf16 linear; 2: float32's linear of the bf16-rounded operands.
Linear run_linear(int kind, const torch::Tensor& x0, const torch::Tensor& w0, const torch::Tensor& b0,
                  const torch::Tensor& up) {
  const auto x = (kind == 2 ? rounded(x0) : x0.clone()).requires_grad_(true);
  const auto w = (kind == 2 ? rounded(w0) : w0.clone()).requires_grad_(true);
  const auto b = b0.defined() ? (kind == 2 ? rounded(b0) : b0.clone()).requires_grad_(true) : torch::Tensor();
  Linear r;
  {
    AutocastGuard autocast(kind == 1, false);
    r.y = kind == 0 ? widened_linear(x, w, b) : torch::nn::functional::linear(x, w, b);
  }
  (r.y.to(torch::kFloat32) * up).sum().backward();
  r.gx = x.grad(), r.gw = w.grad();
  if (b.defined()) r.gb = b.grad();
  return r;
}

double max_error(const torch::Tensor& a, const torch::Tensor& exact) {
  return (a.to(torch::kFloat32) - exact).abs().max().item<double>();
}

TEST(Bf16Products, WidenedLinearIsTheFloatProductOfBf16OperandsRoundedOnce) {
  torch::manual_seed(0);
  for (const bool with_bias : {true, false}) {
    const auto x = torch::randn({48, 40}), w = torch::randn({24, 40}) * 0.2;
    const auto b = with_bias ? torch::randn({24}) : torch::Tensor();
    const auto up = rounded(torch::randn({48, 24}));  // the gradient reaching a bf16 output is bf16
    const Linear ours = run_linear(0, x, w, b, up), autocast = run_linear(1, x, w, b, up);
    const Linear exact = run_linear(2, x, w, b, up);
    ASSERT_EQ(ours.y.scalar_type(), torch::kBFloat16);
    ASSERT_EQ(ours.gw.scalar_type(), torch::kFloat32);
    // Each result rounded to bf16 once: relative error <= 2^-8 (plus float noise near zero).
    EXPECT_TRUE(close(ours.y, exact.y, 1.0 / 256, 1e-5)) << "bias " << with_bias;
    EXPECT_TRUE(close(ours.gx, exact.gx, 1.0 / 256, 1e-5));
    EXPECT_TRUE(close(ours.gw, exact.gw, 1.0 / 256, 1e-5));
    if (with_bias) {
      EXPECT_TRUE(close(ours.gb, exact.gb, 1.0 / 256, 1e-5));
    }
    // Autocast's bf16 kernels round the same operands (here oneDNN's or ATen's emulation, which may also round
    // partial sums): ours is at least as close to the exact products.
    EXPECT_LE(max_error(ours.y, exact.y), max_error(autocast.y, exact.y));
    EXPECT_LE(max_error(ours.gw, exact.gw), max_error(autocast.gw, exact.gw));
    // Same scale as autocast's: nothing dropped or transposed.
    EXPECT_TRUE(close(ours.y, autocast.y, 0.1, 0.1));
    EXPECT_TRUE(close(ours.gx, autocast.gx, 0.1, 0.1));
    EXPECT_TRUE(close(ours.gw, autocast.gw, 0.1, 0.5));
  }
}

TEST(Bf16Products, WidenedLinearRoundsItsOperandsToBf16First) {
  // 1 + 2^-10 is not a bf16 value (it rounds to 1): autocast's product sees 1, and so must the widened one.
  const auto x = torch::full({1, 1}, 1.0f + 1.0f / 1024), w = torch::full({1, 1}, 3.0f);
  EXPECT_EQ(widened_linear(x, w, torch::Tensor()).item<float>(), 3.0f);
  EXPECT_EQ(widened_linear(x, w, torch::full({1}, 1.0f / 1024)).item<float>(), 3.0f);  // bias 2^-10, sum rounded
}

TEST(Bf16Products, WidenedMmOutWritesFloatOrBf16) {
  torch::manual_seed(1);
  const auto a = torch::randn({9, 5}).to(torch::kBFloat16), b = torch::randn({5, 6}).to(torch::kBFloat16);
  const auto exact = torch::mm(a.to(torch::kFloat32), b.to(torch::kFloat32));
  auto out_f = torch::empty({9, 6});
  widened_mm_out(out_f, a, b);
  EXPECT_TRUE(torch::allclose(out_f, exact, 1e-6, 1e-6));
  auto out_b = torch::empty({9, 6}, torch::kBFloat16);
  widened_mm_out(out_b, a, b.to(torch::kFloat32));  // a mix of dtypes
  EXPECT_TRUE(torch::equal(out_b, exact.to(torch::kBFloat16)));
  auto rows = torch::zeros({12, 6}, torch::kBFloat16);
  auto part = rows.narrow(0, 3, 9);  // a view into a larger tensor, as the head loss's chunks are
  widened_mm_out(part, a, b);
  EXPECT_TRUE(torch::equal(rows.narrow(0, 3, 9), exact.to(torch::kBFloat16)));
  EXPECT_EQ(rows.narrow(0, 0, 3).abs().sum().item<float>(), 0.0f);
}

}  // namespace
}  // namespace poslab
