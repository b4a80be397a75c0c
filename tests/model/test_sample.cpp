#include <gtest/gtest.h>

#include "model/gpt.h"
#include "model/sample.h"

namespace poslab {
namespace {

GPT tiny_model() {
  ModelConfig m;
  m.n_layer = 1;
  m.n_head = 2;
  m.n_embd = 16;
  m.block_size = 8;
  torch::manual_seed(0);
  GPT g(m, 20);
  torch::NoGradGuard no_grad;
  for (auto& p : g->parameters()) p.normal_(0.0, 0.5);  // a peaked, non-uniform distribution
  return g;
}

TEST(Sample, SameSeedSameTextAndThePromptIsKept) {
  GPT model = tiny_model();
  SampleOptions opt;
  opt.tokens = 30;  // longer than block_size: the context is cropped
  opt.seed = 7;
  const std::vector<int> prompt = {3, 1, 4};
  const auto a = generate(model, prompt, opt);
  const auto b = generate(model, prompt, opt);
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), prompt.size() + 30);
  EXPECT_TRUE(std::equal(prompt.begin(), prompt.end(), a.begin()));
  for (int id : a) EXPECT_TRUE(id >= 0 && id < 20);
  opt.seed = 8;
  EXPECT_NE(generate(model, prompt, opt), a);
}

TEST(Sample, GreedyAndTopOneAgree) {
  GPT model = tiny_model();
  SampleOptions greedy;
  greedy.tokens = 10;
  greedy.temperature = 0;
  SampleOptions top1 = greedy;
  top1.temperature = 1.0;
  top1.top_k = 1;
  top1.seed = 99;
  EXPECT_EQ(generate(model, {5}, greedy), generate(model, {5}, top1));
  // greedy's first token is the argmax of the logits
  model->eval();
  const auto logits = model->forward(torch::tensor({{5}}, torch::kInt64));
  EXPECT_EQ(generate(model, {5}, greedy)[1], logits[0][0].argmax().item<int64_t>());
}

TEST(Sample, EmptyPromptStartsFromTheStartToken) {
  GPT model = tiny_model();
  SampleOptions opt;
  opt.tokens = 3;
  const auto ids = generate(model, {}, opt, /*start_id=*/2);
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids[0], 2);
}

}  // namespace
}  // namespace poslab
