#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

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

// A temperature near zero is greedy, not an overflow (logits / 1e-45 are infinite in float: softmax read NaN), and
// a huge one is uniform, not an error.
TEST(Sample, ExtremeTemperaturesAreGreedyAndUniform) {
  GPT model = tiny_model();
  SampleOptions greedy;
  greedy.tokens = 10;
  greedy.temperature = 0;
  for (double t : {1e-45, 1e-300, 5e-324}) {
    SampleOptions cold = greedy;
    cold.temperature = t;
    cold.seed = 3;
    EXPECT_EQ(generate(model, {5}, cold), generate(model, {5}, greedy)) << "temperature " << t;
    cold.top_k = 4;
    EXPECT_EQ(generate(model, {5}, cold), generate(model, {5}, greedy)) << "temperature " << t << ", top_k 4";
  }
  SampleOptions hot = greedy;
  hot.temperature = 1e300;
  hot.tokens = 2000;
  const auto ids = generate(model, {5}, hot);
  std::vector<int> seen(20, 0);
  for (int id : ids) seen[id]++;
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 0), 0) << "every token drawn at a near-uniform temperature";
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
