#include <gtest/gtest.h>

#include <algorithm>

#include "model/gpt.h"
#include "train/optim.h"

namespace poslab {
namespace {

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

ModelConfig small(const std::string& position = "learned") {
  ModelConfig m;
  m.n_layer = 1;
  m.n_head = 2;
  m.n_embd = 16;
  m.block_size = 8;
  m.position = position;
  return m;
}

TEST(Optim, TwoDimWeightsDecayBiasesAndNormsDoNot) {
  GPT model(small(), 20);
  const ParamGroups g = split_param_groups(model, /*decay_position_table=*/true);
  EXPECT_TRUE(has(g.decay_names, "wte.weight"));
  EXPECT_TRUE(has(g.decay_names, "wpe.weight"));
  EXPECT_TRUE(has(g.decay_names, "h.0.attn.c_attn.weight"));
  EXPECT_TRUE(has(g.decay_names, "h.0.mlp.c_fc.weight"));
  EXPECT_TRUE(has(g.no_decay_names, "h.0.attn.c_attn.bias"));
  EXPECT_TRUE(has(g.no_decay_names, "h.0.ln_1.weight"));
  EXPECT_TRUE(has(g.no_decay_names, "ln_f.bias"));
  for (const auto& t : g.decay) EXPECT_GE(t.dim(), 2);
  for (const auto& t : g.no_decay) EXPECT_EQ(t.dim(), 1);
  EXPECT_EQ(g.decay.size() + g.no_decay.size(), model->parameters().size());
}

TEST(Optim, PositionTableFollowsItsSwitch) {
  GPT model(small(), 20);
  const ParamGroups g = split_param_groups(model, false);
  EXPECT_TRUE(has(g.no_decay_names, "wpe.weight"));
  EXPECT_FALSE(has(g.decay_names, "wpe.weight"));
  GPT fixed(small("sinusoidal"), 20);
  const ParamGroups f = split_param_groups(fixed, true);
  EXPECT_FALSE(has(f.decay_names, "wpe.weight"));  // a fixed table is not trained at all
  EXPECT_FALSE(has(f.no_decay_names, "wpe.weight"));
}

TEST(Optim, GroupsCarryTheirWeightDecayAndLr) {
  GPT model(small(), 20);
  TrainConfig t;
  t.weight_decay = 0.25;
  auto opt = make_optimizer(model, t);
  ASSERT_EQ(opt->param_groups().size(), 2u);
  auto wd = [&](size_t i) { return static_cast<torch::optim::AdamWOptions&>(opt->param_groups()[i].options()).weight_decay(); };
  EXPECT_DOUBLE_EQ(wd(0), 0.25);
  EXPECT_DOUBLE_EQ(wd(1), 0.0);
  set_optimizer_hparams(*opt, 0.123, t);
  for (auto& g : opt->param_groups()) EXPECT_DOUBLE_EQ(static_cast<torch::optim::AdamWOptions&>(g.options()).lr(), 0.123);
}

TEST(Optim, DecayShrinksAZeroGradientWeight) {
  // AdamW's decoupled decay: with zero gradients, a decayed weight shrinks by lr * wd, a no-decay one stays.
  GPT model(small(), 20);
  TrainConfig t;
  t.weight_decay = 0.5;
  auto opt = make_optimizer(model, t);
  set_optimizer_hparams(*opt, 0.1, t);
  auto wte = model->wte->weight.detach().clone();
  auto ln = model->ln_f->weight.detach().clone();
  for (auto& p : model->parameters()) p.mutable_grad() = torch::zeros_like(p);
  opt->step();
  EXPECT_TRUE(torch::allclose(model->wte->weight, wte * (1 - 0.1 * 0.5)));
  EXPECT_TRUE(torch::allclose(model->ln_f->weight, ln));
}

}  // namespace
}  // namespace poslab
