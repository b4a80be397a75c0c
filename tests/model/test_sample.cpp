#include <gtest/gtest.h>

#include <algorithm>
#include <set>
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

// A prompt of exactly block_size ids is the context whole: the first greedy token is the argmax of the logits at the
// last of all 8 positions. The prompt is chosen so that the window one shorter (the last 7 ids) has another argmax:
// a context cropped one token too short gives another token.
TEST(Sample, APromptOfBlockSizeIdsIsTheWholeContext) {
  GPT model = tiny_model();
  const std::vector<int64_t> prompt = {3, 1, 4, 1, 5, 9, 2, 8};  // block_size 8
  model->eval();
  auto last_argmax = [&](int64_t from) {
    const auto window = torch::tensor(std::vector<int64_t>(prompt.begin() + from, prompt.end()), torch::kInt64);
    return model->forward(window.unsqueeze(0))[0][-1].argmax().item<int64_t>();  // (1, T, V) -> the last position's
  };
  const int64_t whole = last_argmax(0);
  ASSERT_NE(last_argmax(1), whole) << "the prompt does not tell the two windows apart";
  SampleOptions greedy;
  greedy.tokens = 1;
  greedy.temperature = 0;
  const auto ids = generate(model, std::vector<int>(prompt.begin(), prompt.end()), greedy);
  ASSERT_EQ(ids.size(), 9u);
  EXPECT_EQ(ids.back(), whole);
}

// top_k keeps the k largest logits, all of them: at a temperature so high that the kept ones are drawn alike, one
// token from the same prompt over 200 seeds gives exactly the indices of the 3 largest logits (each drawn with
// probability 1/3: missing one of them in 200 draws has probability 3 * (2/3)^200, about 1e-35).
TEST(Sample, TopKDrawsAmongExactlyTheKLargestLogits) {
  GPT model = tiny_model();
  model->eval();
  const auto logits = model->forward(torch::tensor({{5, 2}}, torch::kInt64))[0][-1];  // (V,)
  const auto top3 = std::get<1>(logits.topk(3));
  std::set<int> expected;
  for (int64_t i = 0; i < 3; ++i) expected.insert(static_cast<int>(top3[i].item<int64_t>()));
  SampleOptions hot;
  hot.tokens = 1;
  hot.temperature = 1e300;
  hot.top_k = 3;
  std::set<int> drawn;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    hot.seed = seed;
    drawn.insert(generate(model, {5, 2}, hot).back());
  }
  EXPECT_EQ(drawn, expected);
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
