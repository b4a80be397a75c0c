// The fused causal attention against LibTorch's ops (split, transpose, bmm, masked softmax, bmm), in value and
// gradient, float32 and bfloat16, at lengths that end inside a query block and span several blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/attention.h"
#include "ops/attention_kernel.h"
#include "ops/bf16_gemm.h"
#include "util/kernel_paths.h"

namespace poslab {
namespace {

torch::Tensor attention_reference(const torch::Tensor& qkv, int64_t nh) {
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, hs = C / nh;
  const auto parts = qkv.split(C, 2);
  const auto heads = [&](const torch::Tensor& t) { return t.view({B, T, nh, hs}).transpose(1, 2); };
  const auto q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);
  const auto mask = torch::ones({T, T}, torch::kBool).triu(1);
  const auto att = torch::softmax((torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(hs)))
                                      .masked_fill(mask, -std::numeric_limits<float>::infinity()),
                                  -1);
  return torch::matmul(att, v).transpose(1, 2).contiguous().view({B, T, C});
}

struct Result {
  torch::Tensor y, grad;
};

Result attention_pass(const torch::Tensor& qkv_in, int64_t nh, const torch::Tensor& up, bool fused) {
  const auto qkv = qkv_in.detach().clone().requires_grad_(true);
  const auto y = fused ? causal_attention(qkv, nh) : attention_reference(qkv, nh);
  (y.to(torch::kFloat32) * up).sum().backward();
  return {y.detach(), qkv.grad()};
}

class CausalAttentionFloat : public ::testing::TestWithParam<int64_t> {};

TEST_P(CausalAttentionFloat, ValueAndGradientMatchLibTorchsOps) {
  const int64_t T = GetParam(), B = 2, nh = 3, hs = 8;
  torch::manual_seed(T);
  const auto qkv = torch::randn({B, T, 3 * nh * hs});
  const auto up = torch::randn({B, T, nh * hs});
  const Result ours = attention_pass(qkv, nh, up, true), ref = attention_pass(qkv, nh, up, false);
  EXPECT_TRUE(torch::allclose(ours.y, ref.y, 1e-5, 1e-6)) << (ours.y - ref.y).abs().max();
  EXPECT_TRUE(torch::allclose(ours.grad, ref.grad, 1e-4, 1e-5)) << (ours.grad - ref.grad).abs().max();
  // The first query sees only itself: its output is its own value vector.
  EXPECT_TRUE(torch::allclose(ours.y.select(1, 0), qkv.select(1, 0).slice(-1, 2 * nh * hs), 1e-6, 1e-6));
}

// 1 and 37: one partial block; 64: exactly one; 70 and 150: several, the last one partial.
INSTANTIATE_TEST_SUITE_P(Lengths, CausalAttentionFloat, ::testing::Values(1, 37, 64, 70, 150));

TEST(CausalAttention, BFloat16WithProductsWidenedMatchesTheFloatComputationRoundedOnce) {
  KernelPaths widened = kernel_paths();
  widened.bf16_products = "float";
  KernelPathsGuard guard(widened);
  torch::manual_seed(7);
  const int64_t B = 3, T = 96, nh = 2, hs = 16;
  const auto qkv = torch::randn({B, T, 3 * nh * hs}).to(torch::kBFloat16);
  // bf16 values: the gradient reaching the bf16 output is rounded to bf16, so the float reference's is too.
  const auto up = torch::randn({B, T, nh * hs}).to(torch::kBFloat16).to(torch::kFloat32);
  const Result ours = attention_pass(qkv, nh, up, true);
  const Result ref = attention_pass(qkv.to(torch::kFloat32), nh, up, false);  // the same bf16 inputs, in float
  ASSERT_EQ(ours.y.scalar_type(), torch::kBFloat16);
  ASSERT_EQ(ours.grad.scalar_type(), torch::kBFloat16);
  // Each result is rounded to bf16 once: relative error <= 2^-8 (plus float noise near zero).
  EXPECT_TRUE(torch::allclose(ours.y.to(torch::kFloat32), ref.y, 1.0 / 256, 1e-3))
      << (ours.y.to(torch::kFloat32) - ref.y).abs().max();
  EXPECT_TRUE(torch::allclose(ours.grad.to(torch::kFloat32), ref.grad, 1.0 / 256, 1e-3))
      << (ours.grad.to(torch::kFloat32) - ref.grad).abs().max();
  // and closer to the float computation than LibTorch's own bf16 ops, which round the scores and
  // probabilities too.
  const Result bf16_ops = attention_pass(qkv, nh, up, false);
  const double ours_err = (ours.y.to(torch::kFloat32) - ref.y).abs().max().item<double>();
  const double ops_err = (bf16_ops.y.to(torch::kFloat32) - ref.y).abs().max().item<double>();
  EXPECT_LE(ours_err, ops_err);
}

// The bf16 path (bf16_products other than float): products of bf16 pairs, the probabilities and their gradient
// rounded to bf16 for the products as LibTorch's bf16 ops round them; as close to the float computation as those
// ops are, in the instruction and its emulation alike (the same bits).
TEST(CausalAttention, BFloat16PairProductsAreAsCloseToFloatAsLibTorchsBf16Ops) {
  KernelPaths paths = kernel_paths();
  paths.bf16_products = "onednn";
  KernelPathsGuard guard(paths);
  torch::manual_seed(8);
  const int64_t B = 3, T = 96, nh = 2, hs = 24;  // hs not a multiple of 16: the products' padded columns
  ASSERT_TRUE(attention_bf16_fits(T, hs));
  const auto qkv = torch::randn({B, T, 3 * nh * hs}).to(torch::kBFloat16);
  const auto up = torch::randn({B, T, nh * hs}).to(torch::kBFloat16).to(torch::kFloat32);
  const Result ref = attention_pass(qkv.to(torch::kFloat32), nh, up, false);
  const Result ops = attention_pass(qkv, nh, up, false);
  const auto err = [&](const torch::Tensor& a, const torch::Tensor& b) {
    return (a.to(torch::kFloat32) - b).abs().max().item<double>();
  };
  std::vector<Result> results;
  for (const Bf16Dot mode : {Bf16Dot::kEmulated, Bf16Dot::kNative}) {
    if (mode == Bf16Dot::kNative && !cpu_has_bf16_dot()) continue;  // AVX512-BF16 only
    const Bf16Dot saved = bf16_dot();
    set_bf16_dot(mode);
    results.push_back(attention_pass(qkv, nh, up, true));
    set_bf16_dot(saved);
    const Result& ours = results.back();
    SCOPED_TRACE(mode == Bf16Dot::kNative ? "VDPBF16PS" : "emulated");
    ASSERT_EQ(ours.y.scalar_type(), torch::kBFloat16);
    EXPECT_LE(err(ours.y, ref.y), 1.5 * err(ops.y, ref.y));
    EXPECT_LE(err(ours.grad, ref.grad), 1.5 * err(ops.grad, ref.grad));
    EXPECT_TRUE(torch::allclose(ours.y.to(torch::kFloat32), ref.y, 1.0 / 64, 1e-2)) << err(ours.y, ref.y);
    EXPECT_TRUE(torch::allclose(ours.grad.to(torch::kFloat32), ref.grad, 1.0 / 64, 2e-2)) << err(ours.grad, ref.grad);
    // The first query sees only itself: its output is its own value vector, exactly.
    EXPECT_TRUE(torch::equal(ours.y.select(1, 0), qkv.select(1, 0).slice(-1, 2 * nh * hs)));
  }
  if (results.size() == 2) {
    EXPECT_TRUE(torch::equal(results[0].y, results[1].y));
    EXPECT_TRUE(torch::equal(results[0].grad, results[1].grad));
  }
  // A length that is not a multiple of 16 takes the float path: the same values as with products widened.
  const auto odd = torch::randn({2, 37, 3 * nh * hs}).to(torch::kBFloat16);
  const auto odd_up = torch::randn({2, 37, nh * hs});
  ASSERT_FALSE(attention_bf16_fits(37, hs));
  const Result pairs = attention_pass(odd, nh, odd_up, true);
  paths.bf16_products = "float";
  KernelPathsGuard widened(paths);
  const Result floats = attention_pass(odd, nh, odd_up, true);
  EXPECT_TRUE(torch::equal(pairs.y, floats.y));
  EXPECT_TRUE(torch::equal(pairs.grad, floats.grad));
}

TEST(CausalAttention, WithoutGradientGivesTheSameValues) {
  torch::manual_seed(3);
  const auto qkv = torch::randn({2, 80, 3 * 32});
  const auto with_grad = causal_attention(qkv.clone().requires_grad_(true), 4).detach();
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(causal_attention(qkv, 4), with_grad));
  // A non-contiguous input (every other sequence) is read correctly too.
  const auto wide = torch::randn({4, 80, 3 * 32});
  EXPECT_TRUE(torch::allclose(causal_attention(wide.slice(0, 0, 4, 2), 4),
                              attention_reference(wide.slice(0, 0, 4, 2), 4), 1e-5, 1e-6));
}

TEST(CausalAttention, BadShapesAndTypesAreErrors) {
  EXPECT_THROW(causal_attention(torch::zeros({2, 5, 12}), 5), c10::Error);  // 3C = 12 is not 3 * 5 heads * hs
  EXPECT_THROW(causal_attention(torch::zeros({5, 12}), 2), c10::Error);     // no batch dimension
  EXPECT_THROW(causal_attention(torch::zeros({1, 5, 12}, torch::kFloat64), 2), c10::Error);
  EXPECT_THROW(causal_attention(torch::zeros({1, 5, 12}), 0), c10::Error);
}

// The BLAS's product and the loop that stands in for it where a process has none (no LibTorch poslab builds with).
TEST(GemmRows, EveryTransposeAndRowStrideMatchesTorchMm) {
  torch::manual_seed(11);
  for (const auto gemm : {&gemm_rows, &gemm_rows_loop}) {
    const char* which = gemm == &gemm_rows ? "BLAS" : "loop";
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        const int64_t m = 5, n = 7, k = 3;
        // Stored with wider rows than they use (row strides 9, 10, 11), as heads inside the qkv rows are.
        const auto a_store = torch::randn({ta ? k : m, 9}), b_store = torch::randn({tb ? n : k, 10});
        const auto a = a_store.slice(1, 0, ta ? m : k), b = b_store.slice(1, 0, tb ? k : n);
        auto c = torch::full({m, 11}, 2.0f);
        gemm(ta, tb, m, n, k, a_store.data_ptr<float>(), 9, b_store.data_ptr<float>(), 10, c.data_ptr<float>(), 11,
             /*accumulate=*/false);
        const auto expect = torch::mm(ta ? a.t() : a, tb ? b.t() : b);
        EXPECT_TRUE(torch::allclose(c.slice(1, 0, n), expect, 1e-5, 1e-6)) << which << ta << tb;
        EXPECT_TRUE(torch::equal(c.slice(1, n), torch::full({m, 11 - n}, 2.0f))) << which;  // past n: untouched
        gemm(ta, tb, m, n, k, a_store.data_ptr<float>(), 9, b_store.data_ptr<float>(), 10, c.data_ptr<float>(), 11,
             /*accumulate=*/true);
        EXPECT_TRUE(torch::allclose(c.slice(1, 0, n), 2 * expect, 1e-5, 1e-6)) << which << ta << tb;
      }
    }
  }
}

}  // namespace
}  // namespace poslab
