// A model back from its checkpoint, and the model as its training started (the control of the model-usage numbers).
#include <gtest/gtest.h>

#include "data/batches.h"
#include "formats/npy.h"
#include "load/loaded_model.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/snapshot.h"
#include "train/tiny_run.h"
#include "train/trainer.h"

namespace poslab {
namespace {

using test::TempDir;
using test::tiny_run;

TEST(LoadedModel, TheInitialModelIsTheOneTrainingStartedFrom) {
  TempDir dir;
  const TrainSummary s = train(tiny_run(dir, "run", 20));
  const LoadedModel m = load_model(s.run_dir + "/checkpoints/latest.pt");
  const GPT start = initial_model(m);
  // Its table is the step-0 snapshot, bit for bit; the trained one has moved away from it.
  const NpyArray w0 = read_npy(s.run_dir + "/snapshots/wpe_step000000.npy");
  const auto table0 = torch::tensor(w0.data, torch::kFloat64).view({w0.shape[0], w0.shape[1]});
  EXPECT_TRUE(torch::equal(start->position_table().to(torch::kFloat64), table0));
  EXPECT_FALSE(torch::equal(m.model->position_table().to(torch::kFloat64), table0));
  // Every other weight too: layer 0's kernels at initialisation are those of the step-0 snapshot.
  const NpyArray k0 = read_npy(s.run_dir + "/snapshots/attn_step000000.npy");
  AttentionKernels initial;
  model_usage_json(start, 0, &initial);
  const auto flat = initial.kernels.reshape({-1, initial.positions}).to(torch::kFloat32).to(torch::kFloat64);
  EXPECT_TRUE(torch::allclose(flat, torch::tensor(k0.data, torch::kFloat64).view({k0.shape[0], k0.shape[1]}), 0, 1e-7));
}

// A checkpoint whose weights hold NaN (damage: a run never checkpoints them) is an error naming the weight and the
// run's other checkpoint, not a NaN loss later.
TEST(LoadedModel, NonFiniteWeightsAreDamageNamedOnLoad) {
  TempDir dir;
  const TrainSummary s = train(tiny_run(dir, "run", 2));
  LoadedModel m = load_model(s.run_dir + "/checkpoints/latest.pt");
  {
    torch::NoGradGuard no_grad;
    m.model->wte->weight[3][5] = NAN;
  }
  save_checkpoint(dir / "run/checkpoints/latest.pt", m.model, nullptr, m.meta);
  const std::string e = test::error_of([&] { load_model(dir / "run/checkpoints/latest.pt"); });
  EXPECT_NE(e.find("latest.pt: wte.weight holds 1 NaN or Inf value"), std::string::npos) << e;
  EXPECT_NE(e.find("e.g. best.pt"), std::string::npos) << e;
}

// The attention on real windows: with one window it is the position-only kernel of that window's own rows p_i + t_i.
TEST(LoadedModel, DataAttentionOfOneWindowIsTheKernelOfItsTokensAndPositions) {
  TempDir dir;
  const TrainSummary s = train(tiny_run(dir, "run", 20));
  LoadedModel m = load_model(s.run_dir + "/checkpoints/latest.pt");
  std::vector<int32_t> tokens(500);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<int32_t>((i * 5 + i / 7) % m.tokenizer.vocab_size());
  const AttentionKernels seen = data_attention(m.model, tokens, 1, 1, 3);
  const torch::Tensor idx = BatchSampler(tokens, 1, 16, 3).next().first[0];  // the same window
  AttentionWeights w = layer0_attention_weights(m.model);
  w.table = m.model->position_table() + m.model->wte->weight.index_select(0, idx);
  w.mean_token = torch::Tensor();
  const AttentionKernels expect = attention_kernels(w);
  EXPECT_FALSE(seen.mean_token_added);
  EXPECT_TRUE(torch::allclose(seen.kernels, expect.kernels, 1e-5, 1e-6));
  EXPECT_EQ(seen.heads.size(), 2u);
}

}  // namespace
}  // namespace poslab
