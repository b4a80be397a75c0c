#include <gtest/gtest.h>

#include <cmath>

#include "config/config.h"
#include "model/gpt.h"
#include "util/positions.h"

namespace poslab {
namespace {

constexpr double kGptTol = 1e-5;

ModelConfig small_gpt(const std::string& position = "learned") {
  ModelConfig m;
  m.n_layer = 2;
  m.n_head = 2;
  m.n_embd = 32;
  m.block_size = 12;
  m.position = position;
  return m;
}

TEST(GPT, ShapesAndGpt2Names) {
  torch::manual_seed(0);
  GPT model(small_gpt(), 50);
  auto idx = torch::randint(0, 50, {3, 12}, torch::kInt64);
  EXPECT_EQ(model->forward(idx).sizes(), (std::vector<int64_t>{3, 12, 50}));
  EXPECT_EQ(model->forward(idx.slice(1, 0, 5)).sizes(), (std::vector<int64_t>{3, 5, 50}));
  const auto params = model->named_parameters();
  for (const char* name :
       {"wte.weight", "wpe.weight", "h.0.ln_1.weight", "h.0.attn.c_attn.weight", "h.1.mlp.c_proj.bias", "ln_f.weight"})
    EXPECT_TRUE(params.contains(name)) << name;
  EXPECT_EQ(params["wpe.weight"].sizes(), (std::vector<int64_t>{12, 32}));
  EXPECT_THROW(model->forward(torch::zeros({1, 13}, torch::kInt64)), c10::Error);
}

TEST(GPT, InitFollowsNanoGPT) {
  torch::manual_seed(0);
  ModelConfig m = small_gpt();
  m.n_embd = 256;
  m.block_size = 256;
  m.wpe_init_std = 0.05;
  GPT model(m, 512);
  EXPECT_NEAR(model->wpe->weight.std().item<double>(), 0.05, 0.002);
  EXPECT_NEAR(model->wte->weight.std().item<double>(), 0.02, 0.001);
  EXPECT_NEAR(model->named_parameters()["h.0.attn.c_proj.weight"].std().item<double>(), 0.02 / std::sqrt(4.0), 0.001);
  EXPECT_EQ(model->named_parameters()["h.0.attn.c_attn.bias"].abs().sum().item<double>(), 0.0);
}

TEST(GPT, HeadIsTiedToWte) {
  torch::manual_seed(0);
  GPT model(small_gpt(), 40);
  // No separate head: the parameter count is embeddings + blocks + ln_f.
  int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.numel();
  EXPECT_EQ(model->num_params(), n);
  for (const auto& p : model->named_parameters()) EXPECT_EQ(p.key().find("lm_head"), std::string::npos);
  // Changing wte changes the logits of a fixed hidden state: scaling wte's row v scales logit v.
  auto idx = torch::tensor({{1, 2, 3}}, torch::kInt64);
  auto before = model->forward(idx);
  {
    torch::NoGradGuard g;
    model->wte->weight[7].mul_(2.0);
  }
  auto after = model->forward(idx);
  EXPECT_TRUE(torch::allclose(after.select(2, 7), 2 * before.select(2, 7), 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(after.select(2, 8), before.select(2, 8), 1e-4, 1e-5));
}

TEST(GPT, Causality) {
  torch::manual_seed(1);
  GPT model(small_gpt(), 30);
  model->eval();
  auto idx = torch::randint(0, 30, {1, 12}, torch::kInt64);
  auto changed = idx.clone();
  changed[0][6] = (changed[0][6].item<int64_t>() + 1) % 30;
  auto a = model->forward(idx), b = model->forward(changed);
  const double before = (a.slice(1, 0, 6) - b.slice(1, 0, 6)).abs().max().item<double>();
  const double after = (a.slice(1, 6) - b.slice(1, 6)).abs().max().item<double>();
  EXPECT_LT(before, kGptTol) << "positions before the change must not see it";
  EXPECT_GT(after, 1e-4) << "positions from the change on must see it";
}

// With wpe zeroed a one-layer model is permutation-invariant over the context: the last logits do not
// change when earlier tokens are permuted. With a random wpe they do: wpe is the only source of order.
// (One layer: from the second layer on, the causal mask itself leaks order, since position j's hidden
// state depends on the set of tokens before it; models without position embeddings exploit this.)
TEST(GPT, PositionTableIsTheOnlySourceOfOrder) {
  torch::manual_seed(2);
  ModelConfig m = small_gpt();
  m.n_layer = 1;
  GPT model(m, 30);
  model->eval();
  {
    torch::NoGradGuard g;  // larger weights than the 0.02 init, so that differences stand out of rounding
    for (auto& p : model->parameters())
      if (p.dim() >= 2) p.normal_(0.0, 0.3);
  }
  auto idx = torch::tensor({{3, 9, 14, 1, 22, 5, 17, 8, 11, 2, 27, 6}}, torch::kInt64);
  auto perm = torch::tensor({{14, 1, 3, 22, 9, 17, 5, 11, 2, 8, 27, 6}}, torch::kInt64);  // last token kept
  auto last_diff = [&](GPT& g) {
    return (g->forward(idx).select(1, 11) - g->forward(perm).select(1, 11)).abs().max().item<double>();
  };
  const double scale = model->forward(idx).abs().max().item<double>();
  EXPECT_GT(last_diff(model), 1e-2 * scale) << "a random wpe must make order matter";
  {
    torch::NoGradGuard g;
    model->wpe->weight.zero_();
  }
  EXPECT_LT(last_diff(model), kGptTol * scale) << "a zero wpe must leave order invisible";

  ModelConfig no_pos = m;
  no_pos.position = "none";
  GPT nopos(no_pos, 30);
  nopos->eval();
  EXPECT_FALSE(nopos->wpe);
  EXPECT_FALSE(nopos->position_table().defined());
  EXPECT_LT(last_diff(nopos), kGptTol * nopos->forward(idx).abs().max().item<double>());
}

// The fixed table, unscaled (rows of norm √(C/2)) or matched to the token rows' norm at initialisation (0.02·√C).
TEST(GPT, SinusoidalTableIsFixedAndScaledToTheTokens) {
  ModelConfig unscaled = small_gpt("sinusoidal");
  unscaled.sinusoidal_scale = "none";
  GPT model(unscaled, 20);
  EXPECT_FALSE(model->wpe->weight.requires_grad());
  EXPECT_TRUE(torch::equal(model->wpe->weight, sinusoidal_table(12, 32).to(torch::kFloat32)));
  EXPECT_NEAR(model->wpe->weight.norm(2, 1).mean().item<double>(), std::sqrt(16.0), 1e-5);

  GPT matched(small_gpt("sinusoidal"), 2000);  // the default: match
  EXPECT_FALSE(matched->wpe->weight.requires_grad());
  const double wpe_norm = matched->wpe->weight.norm(2, 1).mean().item<double>();
  const double wte_norm = matched->wte->weight.norm(2, 1).mean().item<double>();
  EXPECT_NEAR(wpe_norm, 0.02 * std::sqrt(32.0), 1e-6);
  EXPECT_NEAR(wpe_norm / wte_norm, 1.0, 0.03) << "2000 token rows of 32 N(0, 0.02²) entries";
  EXPECT_TRUE(
      torch::allclose(matched->wpe->weight, sinusoidal_table(12, 32).to(torch::kFloat32) * 0.02 * std::sqrt(2.0)));
}

TEST(GPT, NoBiasMeansNoBiasParameters) {
  ModelConfig m = small_gpt();
  m.bias = false;
  GPT model(m, 20);
  for (const auto& p : model->named_parameters()) EXPECT_EQ(p.key().find("bias"), std::string::npos) << p.key();
  EXPECT_EQ(model->forward(torch::zeros({1, 4}, torch::kInt64)).size(2), 20);
}

// The attention that dropout takes (q kᵀ, the fused causal softmax, p v) and the fused one give the same outputs, in
// float32 and bfloat16, at a T of vector tails: the one run by model.dropout > 0 is the other's equal in eval.
TEST(GPT, TheAttentionDropoutTakesEqualsTheFusedOne) {
  ModelConfig m;
  m.n_layer = 1;
  m.n_head = 3;
  m.n_embd = 24;
  m.block_size = 37;
  torch::manual_seed(0);
  CausalSelfAttention attn(m);
  attn->eval();
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto qkv = torch::randn({2, 37, 72}).to(dtype);  // (B, T, 3C)
    const auto fused = attn->fused_attention(qkv).to(torch::kFloat32),
               bmm = attn->bmm_attention(qkv).to(torch::kFloat32);
    const bool f32 = dtype == torch::kFloat32;
    EXPECT_TRUE(torch::allclose(bmm, fused, f32 ? 1e-5 : 1.0 / 64, f32 ? 1e-6 : 1e-2))
        << dtype << ": " << (bmm - fused).abs().max().item<double>();
  }
}

TEST(GPT, LossOfUniformLogitsIsLogV) {
  auto logits = torch::zeros({2, 3, 10});
  auto targets = torch::zeros({2, 3}, torch::kInt64);
  EXPECT_NEAR(GPTImpl::loss(logits, targets).item<double>(), std::log(10.0), 1e-6);
}

}  // namespace
}  // namespace poslab
