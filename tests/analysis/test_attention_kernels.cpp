// Positional attention kernels: equal to a direct loop over hand-built weights, and the summaries and kinds of
// kernels whose answer is known (identity: local; equal weights: uniform; exp(−δ/λ): decaying with length λ).
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/attention_kernels.h"
#include "test_tensors.h"
#include "test_util.h"

namespace poslab {
namespace {

using test::error_of;

using test::gaussian;

// The kernel of head h by loops: LayerNorm of p_i + t̄, q and k of the head, softmax over j <= i.
double loop_kernel(const AttentionWeights& w, int64_t h, int64_t i, int64_t j) {
  const int64_t C = w.table.size(1), hs = C / w.n_head;
  auto x = [&](int64_t r) {
    std::vector<double> v(C);
    double mean = 0, var = 0;
    for (int64_t c = 0; c < C; ++c)
      v[c] = w.table[r][c].item<double>() + w.mean_token[c].item<double>(), mean += v[c] / C;
    for (int64_t c = 0; c < C; ++c) var += (v[c] - mean) * (v[c] - mean) / C;
    for (int64_t c = 0; c < C; ++c)
      v[c] = (v[c] - mean) / std::sqrt(var + w.ln_eps) * w.ln_weight[c].item<double>() + w.ln_bias[c].item<double>();
    return v;
  };
  auto proj = [&](const std::vector<double>& v, int64_t row) {
    double s = w.c_attn_bias[row].item<double>();
    for (int64_t c = 0; c < C; ++c) s += w.c_attn_weight[row][c].item<double>() * v[c];
    return s;
  };
  auto score = [&](int64_t a, int64_t b) {
    const auto xa = x(a), xb = x(b);
    double s = 0;
    for (int64_t d = 0; d < hs; ++d) s += proj(xa, h * hs + d) * proj(xb, C + h * hs + d);
    return s / std::sqrt(static_cast<double>(hs));
  };
  double z = 0;
  for (int64_t b = 0; b <= i; ++b) z += std::exp(score(i, b));
  return j > i ? 0.0 : std::exp(score(i, j)) / z;
}

TEST(AttentionKernels, MatchADirectLoopOverHandBuiltWeights) {
  AttentionWeights w;
  w.table = gaussian({10, 8}, 1);
  w.mean_token = 0.3 * gaussian({8}, 2);
  w.ln_weight = 1.0 + 0.1 * gaussian({8}, 3);
  w.ln_bias = 0.1 * gaussian({8}, 4);
  w.c_attn_weight = 0.5 * gaussian({24, 8}, 5);
  w.c_attn_bias = 0.1 * gaussian({24}, 6);
  w.n_head = 2;
  const AttentionKernels k = attention_kernels(w);
  ASSERT_EQ(k.kernels.sizes(), (std::vector<int64_t>{2, 10, 10}));
  EXPECT_TRUE(k.mean_token_added);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 10; ++i)
      for (int64_t j = 0; j < 10; ++j)
        EXPECT_NEAR(k.kernels[h][i][j].item<double>(), loop_kernel(w, h, i, j), 1e-12) << h << " " << i << " " << j;
  // The mean token embedding is part of the kernel: without it the kernel differs.
  AttentionWeights alone = w;
  alone.mean_token = torch::Tensor();
  EXPECT_FALSE(attention_kernels(alone).mean_token_added);
  EXPECT_GT((attention_kernels(alone).kernels - k.kernels).abs().max().item<double>(), 1e-3);
}

TEST(AttentionKernels, ZeroQueriesGiveUniformAndMatchingQueriesGiveLocal) {
  const int64_t P = 64, C = 8;
  AttentionWeights w;
  w.table = gaussian({P, C}, 7);
  w.mean_token = torch::zeros({C}, torch::kFloat64);
  w.ln_weight = torch::ones({C}, torch::kFloat64);
  w.c_attn_weight = torch::zeros({3 * C, C}, torch::kFloat64);
  w.n_head = 1;
  const AttentionKernels uniform = attention_kernels(w);
  EXPECT_EQ(uniform.heads[0].kind, KernelKind::uniform);
  EXPECT_NEAR(uniform.kernels[0][P - 1][0].item<double>(), 1.0 / P, 1e-12);
  EXPECT_DOUBLE_EQ(uniform.heads[0].offset50, uniform.heads[0].uniform_offset50);
  // q = k = 10·x: the score is largest with the query's own row (LayerNorm gives every row the same norm).
  w.c_attn_weight.slice(0, 0, C).copy_(10 * torch::eye(C, torch::kFloat64));
  w.c_attn_weight.slice(0, C, 2 * C).copy_(10 * torch::eye(C, torch::kFloat64));
  const AttentionKernels local = attention_kernels(w);
  EXPECT_EQ(local.heads[0].kind, KernelKind::local);
  EXPECT_GT(local.heads[0].mass_offset0, 0.9);
  EXPECT_EQ(local.heads[0].offset50, 0);
}

// Bidirectional kernels (BERT): offsets are distances, the mass at δ > 0 counts both sides, the summaries read the
// middle half of the queries.
TEST(AttentionKernels, SummariesOfBidirectionalKernels) {
  const int64_t P = 64;
  const HeadKernel flat = summarise_kernel(torch::full({P, P}, 1.0 / P, torch::kFloat64), 0, /*causal=*/false);
  EXPECT_EQ(flat.kind, KernelKind::uniform);
  EXPECT_DOUBLE_EQ(flat.offset50, flat.uniform_offset50);
  EXPECT_NEAR(flat.mass_offset1, 2.0 / P, 1e-12);  // a key on each side
  EXPECT_NEAR(flat.mass_first, 1.0 / P, 1e-12);
  EXPECT_NEAR(flat.offset_profile[1], 2.0 / P, 1e-12);
  // A[i, j] ∝ exp(−|i − j|/λ): symmetric decay, its length recovered from the distances.
  const double lambda = 3.0;
  const auto i = torch::arange(P, torch::kFloat64).unsqueeze(1), j = torch::arange(P, torch::kFloat64).unsqueeze(0);
  const auto e = torch::exp(-(i - j).abs() / lambda);
  const HeadKernel decay = summarise_kernel(e / e.sum(1, true), 1, /*causal=*/false);
  EXPECT_EQ(decay.kind, KernelKind::decaying);
  ASSERT_TRUE(decay.decay_length.has_value());
  EXPECT_NEAR(*decay.decay_length, lambda, 0.3);
  // Mass at distance 1: both neighbours, averaged over the middle half of the queries.
  const auto A = e / e.sum(1, true);
  double m1 = 0;
  for (int64_t q = P / 4; q < P - P / 4; ++q) m1 += (A[q][q - 1] + A[q][q + 1]).item<double>() / (P / 2);
  EXPECT_NEAR(decay.mass_offset1, m1, 1e-12);
}

TEST(AttentionKernels, SummariesOfKnownKernels) {
  const int64_t P = 128;
  const auto lower = torch::ones({P, P}, torch::kFloat64).tril();
  const HeadKernel identity = summarise_kernel(torch::eye(P, torch::kFloat64), 0);
  EXPECT_EQ(identity.kind, KernelKind::local);
  EXPECT_DOUBLE_EQ(identity.mass_offset0, 1.0);
  EXPECT_DOUBLE_EQ(identity.offset90, 0.0);
  EXPECT_DOUBLE_EQ(identity.offset_profile[0], 1.0);
  EXPECT_DOUBLE_EQ(identity.offset_profile[5], 0.0);

  const HeadKernel uniform = summarise_kernel(lower / lower.sum(1, true), 1);
  EXPECT_EQ(uniform.kind, KernelKind::uniform);
  EXPECT_NEAR(uniform.offset50, uniform.uniform_offset50, 1.0);
  // Its offset profile falls only because fewer, longer queries reach the larger offsets: a long decay length.
  ASSERT_TRUE(uniform.decay_length.has_value());
  EXPECT_GT(*uniform.decay_length, P / 4.0);

  // A[i, i − δ] ∝ exp(−δ/λ): decaying, with the decay length recovered.
  const double lambda = 6.0;
  const auto i = torch::arange(P, torch::kFloat64).unsqueeze(1), j = torch::arange(P, torch::kFloat64).unsqueeze(0);
  auto e = torch::exp(-(i - j) / lambda) * lower;
  const HeadKernel decay = summarise_kernel(e / e.sum(1, true), 2);
  EXPECT_EQ(decay.kind, KernelKind::decaying);
  ASSERT_TRUE(decay.decay_length.has_value());
  EXPECT_NEAR(*decay.decay_length, lambda, 0.3);
  // Half the mass within δ where 1 − exp(−(δ + 1)/λ) >= ½: δ = ceil(λ ln 2) − 1.
  EXPECT_DOUBLE_EQ(decay.offset50, std::ceil(lambda * std::log(2.0)) - 1);
  EXPECT_EQ(decay.head, 2);

  // Everything on the window's first position: a sink, although its 50 % offset is as far as it can be.
  auto sink = torch::zeros({P, P}, torch::kFloat64);
  sink.select(1, 0).fill_(1.0);
  const HeadKernel first = summarise_kernel(sink, 3);
  EXPECT_EQ(first.kind, KernelKind::sink);
  EXPECT_DOUBLE_EQ(first.mass_first, 1.0);
  EXPECT_GT(first.offset50, first.uniform_offset50);
}

TEST(AttentionKernels, ShapesThatDoNotFitAreErrors) {
  AttentionWeights w;
  w.table = gaussian({16, 6}, 1);
  w.ln_weight = torch::ones({6}, torch::kFloat64);
  w.c_attn_weight = gaussian({18, 6}, 2);
  w.n_head = 4;
  EXPECT_NE(error_of([&] { attention_kernels(w); }).find("n_embd 6 is not divisible by n_head 4"), std::string::npos);
  w.n_head = 2;
  w.c_attn_weight = gaussian({12, 6}, 2);
  EXPECT_NE(error_of([&] { attention_kernels(w); }).find("expected (18, 6)"), std::string::npos);
}

// The heads in a few words, as the snapshot's log line and the run's ending say them: most frequent kind first
// (ties by name), and whether each head keeps its kind on text.
TEST(AttentionKernels, HeadKindsInWordsMostFrequentFirst) {
  auto heads = [](std::vector<std::string> kinds) {
    nlohmann::json h = nlohmann::json::array();
    for (const auto& k : kinds) h.push_back({{"kind", k}});
    return nlohmann::json{{"heads", h}};
  };
  nlohmann::json usage = {{"attention_kernels", heads({"decaying", "uniform", "uniform", "local", "uniform"})}};
  EXPECT_EQ(head_kinds_words(usage), "3 uniform, 1 decaying, 1 local");  // no text measured: nothing said of it
  usage["data_attention"] = heads({"decaying", "uniform", "uniform", "local", "uniform"});
  EXPECT_EQ(head_kinds_words(usage), "3 uniform, 1 decaying, 1 local (on text too)");
  // the same counts with two heads swapped are not alike: each head is compared with itself
  usage["data_attention"] = heads({"uniform", "decaying", "uniform", "local", "uniform"});
  EXPECT_EQ(head_kinds_words(usage), "3 uniform, 1 decaying, 1 local | on text: 3 uniform, 1 decaying, 1 local");
  usage["data_attention"] = heads({"sink", "sink", "local", "local", "uniform"});
  EXPECT_EQ(head_kinds_words(usage), "3 uniform, 1 decaying, 1 local | on text: 2 local, 2 sink, 1 uniform");
  EXPECT_EQ(head_kinds_words(nlohmann::json::object()), "");
  EXPECT_EQ(kinds_of(usage, "data_attention"), (std::vector<std::string>{"sink", "sink", "local", "local", "uniform"}));
}

}  // namespace
}  // namespace poslab
