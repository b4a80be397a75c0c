#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "model/gpt.h"
#include "train/adamw_kernel.h"
#include "train/optim.h"

namespace poslab {
namespace {

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

ModelConfig small_model(const std::string& position = "learned") {
  ModelConfig m;
  m.n_layer = 1;
  m.n_head = 2;
  m.n_embd = 16;
  m.block_size = 8;
  m.position = position;
  return m;
}

void copy_parameters(const GPT& from, GPT& to) {
  torch::NoGradGuard no_grad;
  const auto src = from->parameters(), dst = to->parameters();
  for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
}

TEST(Optim, TwoDimWeightsDecayBiasesAndNormsDoNot) {
  GPT model(small_model(), 20);
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
  GPT model(small_model(), 20);
  const ParamGroups g = split_param_groups(model, false);
  EXPECT_TRUE(has(g.no_decay_names, "wpe.weight"));
  EXPECT_FALSE(has(g.decay_names, "wpe.weight"));
  GPT fixed(small_model("sinusoidal"), 20);
  const ParamGroups f = split_param_groups(fixed, true);
  EXPECT_FALSE(has(f.decay_names, "wpe.weight"));  // a fixed table is not trained at all
  EXPECT_FALSE(has(f.no_decay_names, "wpe.weight"));
}

TEST(Optim, GroupsCarryTheirWeightDecayAndLr) {
  GPT model(small_model(), 20);
  TrainConfig t;
  t.weight_decay = 0.25;
  auto opt = make_optimizer(model, t);
  ASSERT_EQ(opt->param_groups().size(), 2u);
  auto wd = [&](size_t i) {
    return static_cast<torch::optim::AdamWOptions&>(opt->param_groups()[i].options()).weight_decay();
  };
  EXPECT_DOUBLE_EQ(wd(0), 0.25);
  EXPECT_DOUBLE_EQ(wd(1), 0.0);
  set_optimizer_hparams(*opt, 0.123, t);
  for (auto& g : opt->param_groups())
    EXPECT_DOUBLE_EQ(static_cast<torch::optim::AdamWOptions&>(g.options()).lr(), 0.123);
}

// train.position_lr_scale puts wpe in a third group whose learning rate follows the schedule times the scale, and
// whose decay follows train.decay_position_table; at 1, the two groups as before.
TEST(Optim, PositionTableGetsAGroupOfItsOwnWithItsLrScale) {
  GPT model(small_model(), 20);
  TrainConfig t;
  t.weight_decay = 0.25;
  EXPECT_EQ(make_optimizer(model, t)->param_groups().size(), 2u);
  t.position_lr_scale = 10;
  const ParamGroups g = split_param_groups(model, true, /*own_position_group=*/true);
  EXPECT_EQ(g.position_names, std::vector<std::string>{"wpe.weight"});
  EXPECT_FALSE(has(g.decay_names, "wpe.weight"));
  EXPECT_FALSE(has(g.no_decay_names, "wpe.weight"));
  for (const bool decayed : {true, false}) {
    t.decay_position_table = decayed;
    auto opt = make_optimizer(model, t);
    ASSERT_EQ(opt->param_groups().size(), 3u);
    set_optimizer_hparams(*opt, 0.002, t);
    const auto& o = static_cast<torch::optim::AdamWOptions&>(opt->param_groups()[2].options());
    EXPECT_TRUE(opt->param_groups()[2].params()[0].is_same(model->wpe->weight));
    EXPECT_DOUBLE_EQ(o.lr(), 0.02);
    EXPECT_DOUBLE_EQ(o.weight_decay(), decayed ? 0.25 : 0.0);
    EXPECT_DOUBLE_EQ(static_cast<torch::optim::AdamWOptions&>(opt->param_groups()[0].options()).lr(), 0.002);
  }
}

// Adam's first step moves each weight by lr * g / (|g| + eps): with the same gradients, the table moves 4x as far at
// scale 4 and every other weight exactly as far, through poslab's fused step as through LibTorch's.
TEST(Optim, PositionLrScaleMultipliesTheTablesStep) {
  TrainConfig t;
  t.weight_decay = 0.0;
  t.lr = 1e-3;
  torch::manual_seed(5);
  GPT a(small_model(), 20), b(small_model(), 20), c(small_model(), 20);
  copy_parameters(a, b);
  copy_parameters(a, c);
  TrainConfig scaled = t;
  scaled.position_lr_scale = 4;
  auto opt_a = make_optimizer(a, t), opt_b = make_optimizer(b, scaled), opt_c = make_optimizer(c, scaled);
  const auto wpe0 = a->wpe->weight.detach().clone(), wte0 = a->wte->weight.detach().clone();
  const auto idx = torch::randint(0, 20, {4, 8}, torch::kLong);
  for (GPT* m : {&a, &b, &c}) GPTImpl::loss((*m)->forward(idx), idx.roll(1, 1)).backward();
  for (auto* opt : {opt_a.get(), opt_b.get(), opt_c.get()})
    set_optimizer_hparams(*opt, t.lr, opt == opt_a.get() ? t : scaled);
  fused_adamw_step(*opt_a, 1.0);
  fused_adamw_step(*opt_b, 1.0);
  opt_c->step();  // LibTorch's own step reads the same groups
  const auto step_a = a->wpe->weight.detach() - wpe0;
  EXPECT_GT(step_a.abs().max().item<double>(), 0.5 * t.lr) << "the table has a gradient";
  for (GPT* m : {&b, &c}) {
    EXPECT_TRUE(torch::allclose((*m)->wpe->weight.detach() - wpe0, 4 * step_a, 1e-4, 1e-8));
    EXPECT_TRUE(torch::allclose((*m)->wte->weight.detach() - wte0, a->wte->weight.detach() - wte0, 1e-5, 1e-9));
  }
}

TEST(Optim, DecayShrinksAZeroGradientWeight) {
  // AdamW's decoupled decay: with zero gradients, a decayed weight shrinks by lr * wd, a no-decay one stays.
  GPT model(small_model(), 20);
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

namespace poslab {
namespace {

// Two copies of one model: one stepped by LibTorch's AdamW (after clip_grad_norm_), one by the fused step.
// The gradient norm's sum of squares over more than one block of the kernel (a real model's weights): every block.
TEST(Optim, TheSumOfSquaresAddsEveryBlock) {
  for (const int64_t n : {int64_t{5}, int64_t{4096}, int64_t{3 * 4096 + 5}}) {
    const std::vector<float> x(static_cast<size_t>(n), 0.5f);
    EXPECT_EQ(sum_of_squares(x.data(), n), 0.25 * static_cast<double>(n)) << n;
  }
}

TEST(Optim, FusedStepMatchesLibTorchsAdamWWithClipping) {
  TrainConfig t;
  t.weight_decay = 0.1;
  t.lr = 3e-3;
  torch::manual_seed(3);
  GPT a(small_model(), 20), b(small_model(), 20);
  copy_parameters(a, b);
  auto opt_a = make_optimizer(a, t), opt_b = make_optimizer(b, t);
  const auto idx = torch::randint(0, 20, {4, 8}, torch::kLong);
  for (int step = 0; step < 5; ++step) {
    for (GPT* m : {&a, &b}) GPTImpl::loss((*m)->forward(idx), idx.roll(1, 1)).backward();
    const double norm_a = torch::nn::utils::clip_grad_norm_(a->parameters(), 0.05);
    opt_a->step();
    const double norm_b = grad_norm(*opt_b);
    EXPECT_NEAR(norm_b, norm_a, 1e-5 * norm_a);
    fused_adamw_step(*opt_b, std::min(1.0, 0.05 / (norm_b + 1e-6)));
    opt_a->zero_grad();
    opt_b->zero_grad();
  }
  for (size_t i = 0; i < a->parameters().size(); ++i)
    // atol 1e-6: the key bias's gradient is rounding noise (softmax ignores a constant per row), and Adam
    // normalises noise to steps of ~lr; a wrong update is off by ~lr = 3e-3.
    EXPECT_TRUE(torch::allclose(a->parameters()[i], b->parameters()[i], 1e-5, 1e-6)) << a->named_parameters().keys()[i];
  // The moments live where LibTorch keeps them: a checkpoint of either optimizer has the same state.
  for (const auto& p : b->parameters()) {
    const auto& st = static_cast<torch::optim::AdamWParamState&>(*opt_b->state().at(optimizer_state_key(p)));
    EXPECT_EQ(st.step(), 5);
  }
}

TEST(Optim, FusedStepInPartsGivesTheSameBitsAsTheWholeStep) {
  // The batch split's threads share the update in parts of all the parameters' elements laid end to end: three
  // parts here, cutting through parameters, run one after another. Every parameter and moment equals the
  // whole step's bit for bit, and every part is asked for.
  TrainConfig t;
  t.weight_decay = 0.1;
  torch::manual_seed(4);
  GPT a(small_model(), 20), b(small_model(), 20);
  copy_parameters(a, b);
  auto opt_a = make_optimizer(a, t), opt_b = make_optimizer(b, t);
  const auto idx = torch::randint(0, 20, {4, 8}, torch::kLong);
  std::vector<int> asked;
  const PartRunner in_three = [&](const std::function<void(int, int)>& f) {
    for (int part = 0; part < 3; ++part) {
      asked.push_back(part);
      f(part, 3);
    }
  };
  for (int step = 0; step < 3; ++step) {
    for (GPT* m : {&a, &b}) GPTImpl::loss((*m)->forward(idx), idx.roll(1, 1)).backward();
    fused_adamw_step(*opt_a, 0.5);
    fused_adamw_step(*opt_b, 0.5, in_three);
    opt_a->zero_grad();
    opt_b->zero_grad();
  }
  EXPECT_EQ(asked, (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
  for (size_t i = 0; i < a->parameters().size(); ++i) {
    const torch::Tensor pa = a->parameters()[i];
    const torch::Tensor pb = b->parameters()[i];
    EXPECT_TRUE(torch::equal(pa, pb)) << a->named_parameters().keys()[i];
    const auto& sa = static_cast<torch::optim::AdamWParamState&>(*opt_a->state().at(optimizer_state_key(pa)));
    const auto& sb = static_cast<torch::optim::AdamWParamState&>(*opt_b->state().at(optimizer_state_key(pb)));
    EXPECT_TRUE(torch::equal(sa.exp_avg(), sb.exp_avg()) && torch::equal(sa.exp_avg_sq(), sb.exp_avg_sq()));
    EXPECT_EQ(sb.step(), 3);
  }
}

}  // namespace
}  // namespace poslab
