// The fused LayerNorm against torch::layer_norm, in value and gradients, with float32 and bfloat16 output.
#include <gtest/gtest.h>

#include "ops/layer_norm.h"

namespace poslab {
namespace {

struct LayerNormGrads {
  torch::Tensor y, dx, dw, db, b;  // b: the bias given (undefined without)
};

LayerNormGrads layer_norm_case(bool fused, bool bf16_out, bool with_bias) {
  torch::manual_seed(0);
  auto x0 = torch::randn({3, 333, 48}) * 2 + 0.5;  // 999 rows: a partial chunk
  x0.slice(1, 0, 8).mul_(1e-3);                    // rows of variance ~4e-6, where eps (1e-5) sets their scale
  x0[0][8].fill_(0.7);                             // a constant row: its output is the bias
  const auto x = x0.requires_grad_(true);
  const auto w = (torch::rand({48}) + 0.5).requires_grad_(true);
  const auto b = with_bias ? torch::randn({48}).requires_grad_(true) : torch::Tensor();
  const auto up = torch::randn({3, 333, 48});
  torch::Tensor y;
  if (fused) {
    y = fused_layer_norm(x, w, b, 1e-5, bf16_out);
  } else {
    y = torch::layer_norm(x, {48}, w, b, 1e-5);
    if (bf16_out) y = y.to(torch::kBFloat16);
  }
  (y.to(torch::kFloat32) * up).sum().backward();
  return {y.detach(), x.grad(), w.grad(), with_bias ? b.grad() : torch::Tensor(),
          with_bias ? b.detach() : torch::Tensor()};
}

TEST(LayerNorm, Float32OutputMatchesTorchLayerNorm) {
  for (bool with_bias : {true, false}) {
    const LayerNormGrads ours = layer_norm_case(true, false, with_bias), ref = layer_norm_case(false, false, with_bias);
    EXPECT_EQ(ours.y.scalar_type(), torch::kFloat32);
    // every row as LibTorch's but the constant one, whose output is the bias up to the rounding of its mean
    // amplified by 1/√eps (6e-8 · 316 ≈ 2e-5 in both)
    auto others = torch::ones({3, 333}, torch::kBool);
    others[0][8] = false;
    EXPECT_TRUE(torch::allclose(ours.y.index({others}), ref.y.index({others}), 1e-5, 1e-5))
        << (ours.y - ref.y).index({others}).abs().max();
    const auto bias = with_bias ? ours.b : torch::zeros({48});
    EXPECT_TRUE(torch::allclose(ours.y[0][8], bias, 0, 1e-4)) << (ours.y[0][8] - bias).abs().max();
    EXPECT_TRUE(torch::allclose(ours.dx, ref.dx, 1e-4, 1e-5)) << (ours.dx - ref.dx).abs().max();
    EXPECT_TRUE(torch::allclose(ours.dw, ref.dw, 1e-4, 1e-4)) << (ours.dw - ref.dw).abs().max();
    if (with_bias) {
      EXPECT_TRUE(torch::allclose(ours.db, ref.db, 1e-4, 1e-4));
    }
  }
}

TEST(LayerNorm, BFloat16OutputIsTheFloatResultRoundedOnce) {
  const LayerNormGrads ours = layer_norm_case(true, true, true), ref = layer_norm_case(false, true, true);
  ASSERT_EQ(ours.y.scalar_type(), torch::kBFloat16);
  // At most one bf16 rounding step apart (the float results differ in the last bits before rounding).
  EXPECT_TRUE(torch::allclose(ours.y.to(torch::kFloat32), ref.y.to(torch::kFloat32), 1.0 / 128, 1e-6));
  EXPECT_TRUE(torch::allclose(ours.dx, ref.dx, 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(ours.dw, ref.dw, 1e-4, 1e-4));
}

TEST(LayerNorm, WrongTypesAndSizesAreErrors) {
  EXPECT_THROW(fused_layer_norm(torch::zeros({2, 4}, torch::kFloat64), torch::ones({4}), {}, 1e-5, false), c10::Error);
  EXPECT_THROW(fused_layer_norm(torch::zeros({2, 4}), torch::ones({3}), {}, 1e-5, false), c10::Error);
}

}  // namespace
}  // namespace poslab
