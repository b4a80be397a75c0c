// One optimizer update: the fp32 loss trajectory is pinned, so speed work cannot change results unnoticed.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "config/config.h"
#include "data/batches.h"
#include "model/gpt.h"
#include "test_util.h"
#include "train/device_adamw.h"
#include "train/optim.h"
#include "train/step.h"
#include "util/error.h"
#include "util/kernel_paths.h"

namespace poslab {
namespace {

Config pinned_config() {
  Config cfg = load_config("", {"model.n_layer=2", "model.n_head=2", "model.n_embd=32", "model.block_size=16",
                                "train.batch_size=8", "train.lr=1e-2", "train.dtype=float32", "train.grad_clip=1.0"});
  return cfg;
}

// Token ids 0..39, each one or two more than the last (mod 40), from a fixed linear-congruential generator:
// learnable (the loss falls from ln 40 towards ln 2) and the same on every machine.
std::vector<int32_t> pinned_tokens() {
  std::vector<int32_t> t(4000);
  uint32_t s = 12345;
  int32_t v = 0;
  for (auto& out : t) {
    s = s * 1103515245u + 12345u;
    v = (v + 1 + static_cast<int32_t>((s >> 16) & 1)) % 40;
    out = v;
  }
  return t;
}

std::vector<double> losses_of(const Config& cfg, int steps) {
  torch::manual_seed(1234);
  GPT model(cfg.model, 40);
  auto opt = make_optimizer(model, cfg.train);
  BatchSampler sampler(pinned_tokens(), cfg.train.batch_size, cfg.model.block_size, 99);
  std::vector<double> out;
  for (int i = 0; i < steps; ++i)
    out.push_back(train_step(model, *opt, sampler, cfg.train, cfg.train.lr, torch::kCPU).loss.item<double>());
  return out;
}

// Measured with the plain (unoptimised, single-stream) step before any speed work; any later change to the
// step must reproduce it to float tolerance. 1e-4 allows another BLAS's rounding, not a change of method.
TEST(Step, Fp32LossTrajectoryIsPinned) {
  const std::vector<double> pinned = {3.718251, 3.597106, 3.409209, 3.213886, 3.137907, 2.864844,
                                      2.677876, 2.521734, 2.399413, 2.213865, 2.089274, 1.999896};
  const std::vector<double> got = losses_of(pinned_config(), static_cast<int>(pinned.size()));
  for (size_t i = 0; i < pinned.size(); ++i) EXPECT_NEAR(got[i], pinned[i], 1e-4) << "step " << i;
}

// A gradient that overflows while the loss stays finite: the norm says so, and no parameter moves.
TEST(Step, AGradientThatOverflowsSkipsTheUpdate) {
  const Config cfg = load_config("", {"model.n_layer=1", "model.n_head=2", "model.n_embd=16", "model.block_size=8",
                                      "train.batch_size=2", "train.dtype=float32"});
  torch::manual_seed(1);
  GPT model(cfg.model, 20);
  auto opt = make_optimizer(model, cfg.train);
  std::vector<torch::Tensor> before;
  for (const auto& q : model->parameters()) before.push_back(q.detach().clone());
  model->wpe->weight.register_hook([](const torch::Tensor& g) { return g * std::numeric_limits<float>::infinity(); });
  const auto x = torch::randint(0, 20, {2, 8}, torch::kLong), y = torch::randint(0, 20, {2, 8}, torch::kLong);
  const StepResult r = train_step_on(model, *opt, {Batch{x, y}}, cfg.train, 1e-2, torch::kCPU);
  EXPECT_TRUE(std::isfinite(r.loss.item<double>()));
  EXPECT_FALSE(std::isfinite(r.grad_norm));
  EXPECT_FALSE(r.finite);
  const auto params = model->parameters();
  for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(torch::equal(params[i], before[i])) << i;
}

// The step on the device (train.adamw fused: LibTorch's fused AdamW, with the norm, the clip and the skip there and
// nothing read back) follows the pinned trajectory, whole and through a batch split of 2. Where this LibTorch has no
// fused kernel, asking for it stops naming the key.
TEST(Step, TheStepOnTheDeviceFollowsThePinnedTrajectory) {
  Config cfg = pinned_config();
  cfg.train.adamw = "fused";
  const std::string why = DeviceAdamW::unsupported(torch::kCPU);
  if (!why.empty()) {
    std::cout << "[ info ] this LibTorch has no fused AdamW (" << why << "): its error is what is tested\n";
    const std::string msg = test::error_of([&] { losses_of(cfg, 1); });
    EXPECT_NE(msg.find("train.adamw = fused: "), std::string::npos) << msg;
    return;
  }
  const std::vector<double> plain = losses_of(pinned_config(), 8), fused = losses_of(cfg, 8);
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_NEAR(fused[i], plain[i], 1e-4) << "step " << i;
  torch::manual_seed(1234);
  GPT model(cfg.model, 40);
  auto opt = make_optimizer(model, cfg.train);
  BatchSampler sampler(pinned_tokens(), cfg.train.batch_size, cfg.model.block_size, 99);
  BatchSplit split(model, 2);
  for (int i = 0; i < 8; ++i) {
    const StepResult r = train_step(model, *opt, sampler, cfg.train, cfg.train.lr, torch::kCPU, &split);
    EXPECT_TRUE(r.unread);
    EXPECT_EQ(r.device_skipped.item<float>(), 0.0f);
    EXPECT_GT(r.device_norm.item<double>(), 0.0);
    EXPECT_NEAR(r.loss.item<double>(), plain[i], 1e-4) << "step " << i << ", 2 ways";
  }
}

}  // namespace
}  // namespace poslab

namespace poslab {
namespace {

// `steps` updates through a batch split of `ways` (the process's kernel paths): the losses and the final table.
std::pair<std::vector<double>, torch::Tensor> split_run(const Config& cfg, int ways, int steps) {
  torch::manual_seed(1234);
  GPT model(cfg.model, 40);
  auto opt = make_optimizer(model, cfg.train);
  BatchSampler sampler(pinned_tokens(), cfg.train.batch_size, cfg.model.block_size, 99);
  BatchSplit split(model, ways);
  std::vector<double> out;
  for (int i = 0; i < steps; ++i)
    out.push_back(train_step(model, *opt, sampler, cfg.train, cfg.train.lr, torch::kCPU, &split).loss.item<double>());
  return std::make_pair(out, model->position_table().clone());
}

// The batch cut in 2 or 3 slices trained in parallel threads: the same trajectory to float rounding, and the
// same from run to run (gradients are added in a fixed order, whatever the threads' timing).
TEST(Step, BatchSplitFollowsThePinnedTrajectoryAndRepeatsExactly) {
  const Config cfg = pinned_config();
  const std::vector<double> plain = losses_of(cfg, 8);
  for (int ways : {2, 3}) {
    const auto [first, table1] = split_run(cfg, ways, 8);
    const auto [second, table2] = split_run(cfg, ways, 8);
    for (size_t i = 0; i < plain.size(); ++i) EXPECT_NEAR(first[i], plain[i], 1e-4) << ways << " ways, step " << i;
    EXPECT_EQ(first, second) << ways << " ways";
    EXPECT_TRUE(torch::equal(table1, table2)) << ways << " ways";
  }
  // A batch that 3 ways cut into 2 slices (LibTorch's chunk: 4 rows, 2 a slice), as 3 threads and batch 4 do: the
  // third worker has no slice and the step is the whole batch's.
  Config four = cfg;
  four.train.batch_size = 4;
  const std::vector<double> whole = losses_of(four, 8);
  const std::vector<double> three = split_run(four, 3, 8).first;
  ASSERT_EQ(three.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) EXPECT_NEAR(three[i], whole[i], 1e-4) << "batch 4 on 3 ways, step " << i;
}

// The whole-model step (step=direct, model/direct_pass.h) against autograd's on the same batches, whole and split:
// the pinned trajectory and the same table to float rounding, also with gradients accumulated over micro-batches.
TEST(Step, TheDirectStepFollowsAutogradsTrajectory) {
  auto run = [](const Config& cfg, int ways, const char* step) {
    KernelPaths paths = default_kernel_paths(false);
    paths.step = step;
    KernelPathsGuard guard(paths);
    return split_run(cfg, ways, 8);
  };
  const Config cfg = pinned_config();
  const std::vector<double> plain = losses_of(cfg, 8);
  Config accum = cfg;
  accum.train.grad_accum = 3;
  accum.train.batch_size = 4;
  for (const Config* c : std::vector<const Config*>{&cfg, &accum})
    for (int ways : {1, 2}) {
      const auto [ours, ours_table] = run(*c, ways, "direct");
      const auto [theirs, their_table] = run(*c, ways, "autograd");
      for (size_t i = 0; i < ours.size(); ++i) {
        EXPECT_NEAR(ours[i], theirs[i], 1e-4) << ways << " ways, grad_accum " << c->train.grad_accum << ", step " << i;
        if (c == &cfg) {
          EXPECT_NEAR(ours[i], plain[i], 1e-4) << ways << " ways, step " << i;
        }
      }
      EXPECT_LE((ours_table - their_table).abs().max().item<double>(), 1e-4) << ways << " ways";
    }
}

// The same in bf16 (autocast, products through oneDNN, which the direct step needs): the two steps round at the
// same points, so their trajectories stay within bf16's rounding of each other.
TEST(Step, TheDirectStepFollowsAutocastsTrajectoryInBf16) {
  auto run = [](const Config& cfg, int ways, const char* step) {
    KernelPaths paths = default_kernel_paths(false);
    paths.bf16_products = "onednn";
    paths.step = step;
    KernelPathsGuard guard(paths);
    return split_run(cfg, ways, 6);
  };
  Config cfg = pinned_config();
  cfg.train.dtype = "bfloat16";
  for (int ways : {1, 2}) {
    const auto [ours, ours_table] = run(cfg, ways, "direct");
    const auto [theirs, their_table] = run(cfg, ways, "autograd");
    for (size_t i = 0; i < ours.size(); ++i) EXPECT_NEAR(ours[i], theirs[i], 5e-3) << ways << " ways, step " << i;
    EXPECT_LE((ours_table - their_table).abs().max().item<double>(), 5e-3) << ways << " ways";
  }
}

// A slice that fails on a worker thread: the error reaches the caller, and the same workers serve the next call.
TEST(Step, BatchSplitReportsAWorkersErrorAndKeepsWorking) {
  const Config cfg = pinned_config();
  torch::manual_seed(1234);
  GPT model(cfg.model, 40);
  BatchSplit split(model, 2);
  const auto x = torch::zeros({8, 16}, torch::kLong);
  auto y = torch::zeros({8, 16}, torch::kLong);
  y[7][3] = 40;  // outside the vocabulary, in the worker's slice (rows 4..7) only
  const int threads = at::get_num_threads();
  at::set_num_threads(3);  // the slices run on one intra-op thread each; the caller's count comes back, error or not
  EXPECT_THROW(split.forward_backward(x, y, 1.0, false, torch::kCPU), c10::Error);
  EXPECT_EQ(at::get_num_threads(), 3);
  y[7][3] = 0;
  const double loss = split.forward_backward(x, y, 1.0, false, torch::kCPU).item<double>();
  EXPECT_EQ(at::get_num_threads(), 3);
  at::set_num_threads(threads);
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_GT(loss, 0.0);
}

TEST(Step, BatchSplitWaysFollowTheConfig) {
  Config cfg = pinned_config();
  EXPECT_EQ(batch_split_ways(cfg, 2, torch::kCPU), 2);  // auto: one slice per thread
  cfg.run.batch_split = 3;
  EXPECT_EQ(batch_split_ways(cfg, 2, torch::kCPU), 3);
  cfg.run.batch_split = 0;
  cfg.model.dropout = 0.1;
  EXPECT_EQ(batch_split_ways(cfg, 2, torch::kCPU), 1);  // dropout: one generator, no split
  EXPECT_NE(test::error_of([] {
              load_config("", {"run.batch_split=2", "model.dropout=0.1"});
            }).find("run.batch_split = 2: must be 1 or auto when model.dropout > 0"),
            std::string::npos);
  EXPECT_NE(test::error_of([] {
              load_config("", {"run.batch_split=64", "train.batch_size=32"});
            }).find("run.batch_split = 64: must be at most train.batch_size (32)"),
            std::string::npos);
  EXPECT_NE(test::error_of([] {
              load_config("", {"run.batch_split=0"});
            }).find("run.batch_split = 0: expected auto or a positive integer"),
            std::string::npos);
}

}  // namespace
}  // namespace poslab
