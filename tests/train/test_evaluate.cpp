#include <gtest/gtest.h>

#include <numeric>

#include "model/gpt.h"
#include "train/evaluate.h"

namespace poslab {
namespace {

TEST(Evaluate, PerPositionLossHasBlockSizeEntriesAndAgreesWithTheMean) {
  ModelConfig m;
  m.n_layer = 1;
  m.n_head = 2;
  m.n_embd = 16;
  m.block_size = 12;
  torch::manual_seed(0);
  GPT model(m, 30);
  std::vector<int32_t> tokens(2000);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 7) % 30);
  const torch::Device cpu(torch::kCPU);
  const PositionLoss r = evaluate_positions(model, tokens, 3, 4, 11, false, cpu);
  ASSERT_EQ(r.by_position.size(), 12u);
  EXPECT_EQ(r.tokens, 3 * 4 * 12);
  const double mean = std::accumulate(r.by_position.begin(), r.by_position.end(), 0.0) / 12;
  EXPECT_NEAR(r.loss, mean, 1e-12);
  EXPECT_NEAR(r.loss, estimate_loss(model, tokens, 3, 4, 11, false, cpu), 1e-5);  // same windows, same loss
  EXPECT_NEAR(r.loss, std::log(30.0), 0.2);  // an untrained model is near uniform
  EXPECT_TRUE(model->is_training()) << "the previous mode is restored";
  EXPECT_NE(eval_seed(5, "val"), eval_seed(5, "train"));
}

}  // namespace
}  // namespace poslab
