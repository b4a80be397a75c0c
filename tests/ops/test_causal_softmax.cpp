// The fused causal softmax against scale + masked_fill + softmax, in value and gradient, float32 and bfloat16.
#include <gtest/gtest.h>

#include <limits>

#include "ops/causal_softmax.h"

namespace poslab {
namespace {

torch::Tensor softmax_reference(const torch::Tensor& s, double scale) {
  const int64_t T = s.size(-1);
  const auto mask = torch::ones({T, T}, torch::kBool).triu(1);
  return torch::softmax((s * scale).masked_fill(mask, -std::numeric_limits<float>::infinity()), -1);
}

// bfloat16 at T of vector tails and of whole vectors: exact zeros after the query, the rest as the unfused ops.
TEST(CausalSoftmax, Bf16IsExactlyZeroAfterTheQuery) {
  for (const int64_t T : {37, 64}) {
    torch::manual_seed(T);
    const auto s = (torch::randn({4, T, T}) * 4).to(torch::kBFloat16);
    const auto out = causal_softmax(s, 0.125).to(torch::kFloat32);
    EXPECT_EQ(out.triu(1).abs().sum().item<float>(), 0.0f) << "T " << T;
    EXPECT_TRUE(torch::allclose(out, softmax_reference(s.to(torch::kFloat32), 0.125), 1.0 / 256, 1e-6)) << "T " << T;
  }
}

TEST(CausalSoftmax, Float32ValueAndGradientMatchTheUnfusedOps) {
  torch::manual_seed(0);
  const auto s = (torch::randn({6, 37, 37}) * 3).requires_grad_(true);  // odd T: vector tails
  const auto up = torch::randn({6, 37, 37});
  const auto ours = causal_softmax(s, 0.17);
  (ours * up).sum().backward();
  const auto g_ours = s.grad().clone();
  s.mutable_grad() = torch::Tensor();
  const auto ref = softmax_reference(s, 0.17);
  (ref * up).sum().backward();
  EXPECT_TRUE(torch::allclose(ours, ref, 1e-5, 1e-7)) << (ours - ref).abs().max();
  EXPECT_TRUE(torch::allclose(g_ours, s.grad(), 1e-4, 1e-6)) << (g_ours - s.grad()).abs().max();
  EXPECT_EQ(ours.triu(1).abs().sum().item<float>(), 0.0f);  // nothing after the query
  EXPECT_TRUE(torch::allclose(ours.sum(-1), torch::ones({6, 37}), 1e-5));
}

TEST(CausalSoftmax, BFloat16MatchesTheFloat32ComputationRoundedOnce) {
  torch::manual_seed(1);
  const auto s = (torch::randn({4, 64, 64}) * 4).to(torch::kBFloat16).requires_grad_(true);
  const auto up = torch::randn({4, 64, 64}).to(torch::kBFloat16);
  const auto ours = causal_softmax(s, 0.125);
  (ours.to(torch::kFloat32) * up.to(torch::kFloat32)).sum().backward();
  ASSERT_EQ(ours.scalar_type(), torch::kBFloat16);
  ASSERT_EQ(s.grad().scalar_type(), torch::kBFloat16);
  const auto wide = s.detach().to(torch::kFloat32).requires_grad_(true);
  const auto ref = softmax_reference(wide, 0.125);
  (ref * up.to(torch::kFloat32)).sum().backward();
  // One bf16 rounding of the result: relative error <= 2^-8.
  EXPECT_TRUE(torch::allclose(ours.to(torch::kFloat32), ref, 1.0 / 256, 1e-6));
  EXPECT_TRUE(torch::allclose(s.grad().to(torch::kFloat32), wide.grad(), 1.0 / 64, 1e-3));
}

TEST(CausalSoftmax, BadShapesAndTypesAreErrors) {
  EXPECT_THROW(causal_softmax(torch::zeros({2, 3, 4}), 1.0), c10::Error);
  EXPECT_THROW(causal_softmax(torch::zeros({3, 3}), 1.0), c10::Error);
  EXPECT_THROW(causal_softmax(torch::zeros({1, 3, 3}, torch::kFloat64), 1.0), c10::Error);
}

}  // namespace
}  // namespace poslab
