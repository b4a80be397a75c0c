#include <gtest/gtest.h>

#include <numeric>

#include "model/gpt.h"
#include "train/evaluate.h"
#include "train/step.h"
#include "util/kernel_paths.h"

namespace poslab {
namespace {

// A small model's config: n_layer layers of 2 heads, n_embd wide, 12 positions.
ModelConfig eval_model_config(int n_layer, int n_embd) {
  ModelConfig m;
  m.n_layer = n_layer;
  m.n_head = 2;
  m.n_embd = n_embd;
  m.block_size = 12;
  return m;
}

// 2,000 ids of a 30-token vocabulary in a fixed pattern ((7 i + i / every) mod 30; every 0: 7 i mod 30).
std::vector<int32_t> cycled_tokens(size_t every) {
  std::vector<int32_t> tokens(2000);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 7 + (every ? i / every : 0)) % 30);
  return tokens;
}

TEST(Evaluate, PerPositionLossHasBlockSizeEntriesAndAgreesWithTheMean) {
  torch::manual_seed(0);
  GPT model(eval_model_config(1, 16), 30);
  const std::vector<int32_t> tokens = cycled_tokens(0);
  const torch::Device cpu(torch::kCPU);
  const PositionLoss r = evaluate_positions(model, tokens, 3, 4, 11, false, cpu);
  ASSERT_EQ(r.by_position.size(), 12u);
  EXPECT_EQ(r.tokens, 3 * 4 * 12);
  const double mean = std::accumulate(r.by_position.begin(), r.by_position.end(), 0.0) / 12;
  EXPECT_NEAR(r.loss, mean, 1e-12);
  EXPECT_NEAR(r.loss, estimate_loss(model, tokens, 3, 4, 11, false, cpu), 1e-5);  // same windows, same loss
  EXPECT_NEAR(r.loss, std::log(30.0), 0.2);                                       // an untrained model is near uniform
  EXPECT_TRUE(model->is_training()) << "the previous mode is restored";
  EXPECT_NE(eval_seed(5, "val"), eval_seed(5, "train"));
}

// Training's evaluation through its batch split: the same windows, the same loss to float rounding, on each step
// path (the whole-model forward or the model's own) and dtype; no gradient is made, the model's mode comes back.
TEST(Evaluate, TheLossThroughTheBatchSplitIsTheWholeBatchs) {
  torch::manual_seed(0);
  GPT model(eval_model_config(2, 32), 30);
  const std::vector<int32_t> tokens = cycled_tokens(3);
  const torch::Device cpu(torch::kCPU);
  for (bool bf16 : {false, true})
    for (const char* step : {"direct", "autograd"}) {
      KernelPaths paths = default_kernel_paths(false);
      paths.bf16_products = "onednn";  // the bf16 whole-model pass runs with these
      paths.step = step;
      KernelPathsGuard guard(paths);
      const double whole = estimate_loss(model, tokens, 3, 6, 11, bf16, cpu);
      for (int ways : {1, 2, 4}) {
        BatchSplit split(model, ways);
        const double cut = estimate_loss(model, tokens, 3, 6, 11, bf16, cpu, {}, &split);
        EXPECT_NEAR(cut, whole, (bf16 ? 1e-3 : 1e-5) * whole) << step << (bf16 ? " bf16 " : " float32 ") << ways;
      }
    }
  for (const auto& p : model->parameters()) EXPECT_FALSE(p.grad().defined());
  EXPECT_TRUE(model->is_training());
}

// poslab eval --shift: shift 0 of windows as long as the table is the ordinary evaluation, bit for bit; a model
// without a table does not care where a window starts; a shift by S is the same as moving the table up by S rows.
TEST(Evaluate, ShiftedWindowsReadTheTableFromTheirStartRow) {
  ModelConfig m = eval_model_config(1, 16);
  m.wpe_init_std = 0.5;  // a table that matters to the loss
  torch::manual_seed(0);
  GPT model(m, 30);
  const std::vector<int32_t> tokens = cycled_tokens(5);
  const torch::Device cpu(torch::kCPU);
  const PositionLoss plain = evaluate_positions(model, tokens, 3, 4, 11, false, cpu);
  const ShiftLoss zero = evaluate_shifts(model, tokens, 3, 4, 11, false, cpu, {0});
  EXPECT_EQ(zero.length, 12);
  EXPECT_EQ(zero.at[0].by_position, plain.by_position);
  EXPECT_EQ(zero.at[0].loss, plain.loss);

  std::vector<int> counts;  // the progress callback: each batch scored, counted over every shift
  const ShiftLoss shifted =
      evaluate_shifts(model, tokens, 3, 4, 11, false, cpu, {0, 3, 5}, [&](int n) { counts.push_back(n); });
  EXPECT_EQ(counts, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  ASSERT_EQ(shifted.length, 7);
  ASSERT_EQ(shifted.at.size(), 3u);
  EXPECT_EQ(shifted.at[1].by_position.size(), 7u);
  EXPECT_NE(shifted.at[0].loss, shifted.at[2].loss) << "a table with large rows: its rows matter";
  GPT moved(m, 30);  // the same weights, its table moved up by 3 rows
  {
    torch::NoGradGuard no_grad;
    const auto params = model->named_parameters();
    for (auto& p : moved->named_parameters()) p.value().copy_(params[p.key()]);
    moved->wpe->weight.slice(0, 0, 9).copy_(model->wpe->weight.slice(0, 3, 12));
  }
  const PositionLoss at3 = evaluate_positions(moved, tokens, 3, 4, 11, false, cpu, 7, 0);
  for (size_t i = 0; i < 7; ++i) EXPECT_NEAR(at3.by_position[i], shifted.at[1].by_position[i], 1e-6) << i;

  m.position = "none";
  torch::manual_seed(0);
  GPT none(m, 30);
  const ShiftLoss flat = evaluate_shifts(none, tokens, 3, 4, 11, false, cpu, {0, 2, 6});
  EXPECT_EQ(flat.at[0].by_position, flat.at[2].by_position);
}

}  // namespace
}  // namespace poslab
