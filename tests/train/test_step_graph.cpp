// The step captured as a CUDA graph (train/step_graph.h) against the eager step on the device: the same numbers
// step by step. On the CPU the graph is emulated (the captured step run again at each replay), which checks what
// the graph is fed and what comes out of it; the CUDA case checks a real graph. Both need LibTorch's fused AdamW
// (2.4 or later): the pip leg runs them, Debian's 1.13 skips them saying so.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "config/config.h"
#include "data/batches.h"
#include "model/gpt.h"
#include "test_devices.h"
#include "test_util.h"
#include "train/optim.h"
#include "train/schedule.h"
#include "train/step.h"
#include "train/step_graph.h"

namespace poslab {
namespace {

Config graph_config() {
  return load_config(
      "", {"model.n_layer=2", "model.n_head=2", "model.n_embd=32", "model.block_size=16", "train.batch_size=4",
           "train.grad_accum=2", "train.lr=1e-2", "train.warmup_steps=3", "train.max_steps=10", "train.min_lr=1e-3",
           "train.grad_clip=0.5", "train.adamw=fused", "train.position_lr_scale=10", "train.dtype=float32"});
}

std::vector<int32_t> graph_tokens() {
  std::vector<int32_t> t(3000);
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<int32_t>((i * 7 + i / 5) % 40);
  return t;
}

struct Trajectory {
  std::vector<StepResult> steps;      // each step's result, read only after the last step
  std::vector<torch::Tensor> params;  // the weights after the last step
  std::vector<torch::Tensor> moments;
};

// train.max_steps steps at the schedule's rates, each step's result kept unread until the end (a graph's outputs
// are rewritten by the next replay: what a step returns must be its own).
Trajectory train_steps(const Config& cfg, const torch::Device& device, bool graph, int64_t* replays = nullptr) {
  torch::manual_seed(4321);
  GPT model(cfg.model, 40);
  model->to(device);
  auto opt = make_optimizer(model, cfg.train);
  BatchSampler sampler(graph_tokens(), cfg.train.batch_size, cfg.model.block_size, 7);
  BatchSplit split(model, 1);
  StepGraph step_graph(model, *opt, cfg.train, device, &split, /*emulated=*/!device.is_cuda());
  Trajectory out;
  for (int s = 0; s < cfg.train.max_steps; ++s) {
    const double lr = lr_at(s, cfg.train);
    out.steps.push_back(graph ? step_graph.step(sampler, lr)
                              : train_step(model, *opt, sampler, cfg.train, lr, device, &split));
  }
  for (const auto& p : model->parameters()) {
    out.params.push_back(p.detach().cpu());
    out.moments.push_back(adamw_state(*opt, p).exp_avg_sq().cpu());
  }
  if (replays) *replays = step_graph.replays();
  return out;
}

class StepGraphOnDevice : public test::OnDevice {
 protected:
  void SetUp() override {
    test::OnDevice::SetUp();
    if (IsSkipped()) return;
    const std::string why = DeviceAdamW::unsupported(device());
    if (!why.empty()) GTEST_SKIP() << "no fused AdamW in this LibTorch (" << why << "): the pip leg runs it";
  }
};

// Every step's loss, gradient norm and skip flag, and the weights and moments after 10 steps (3 eager, one captured
// and replayed, 6 replays), equal the eager step's bit for bit, the rates of a warmup and a cosine decay included:
// the rate reaches the replays as an input, the batches too, and each step's outputs stay its own.
TEST_P(StepGraphOnDevice, ReplaysGiveTheEagerStepsNumbersBitForBit) {
  const Config cfg = graph_config();
  int64_t replays = 0;
  const Trajectory eager = train_steps(cfg, device(), false), graph = train_steps(cfg, device(), true, &replays);
  EXPECT_EQ(replays, cfg.train.max_steps - StepGraph::kEagerSteps);
  ASSERT_EQ(eager.steps.size(), graph.steps.size());
  for (size_t s = 0; s < eager.steps.size(); ++s) {
    ASSERT_TRUE(graph.steps[s].unread);
    EXPECT_EQ(graph.steps[s].loss.item<float>(), eager.steps[s].loss.item<float>()) << "step " << s;
    EXPECT_EQ(graph.steps[s].device_norm.item<float>(), eager.steps[s].device_norm.item<float>()) << "step " << s;
    EXPECT_EQ(graph.steps[s].device_skipped.item<float>(), 0.0f) << "step " << s;
  }
  EXPECT_LT(graph.steps.back().loss.item<float>(), graph.steps.front().loss.item<float>()) << "it trains";
  for (size_t i = 0; i < eager.params.size(); ++i) {
    EXPECT_TRUE(torch::equal(graph.params[i], eager.params[i])) << "parameter " << i;
    EXPECT_TRUE(torch::equal(graph.moments[i], eager.moments[i])) << "moment of parameter " << i;
  }
}

// A non-finite step in a replay is skipped on the device as in an eager step: nothing changes, the flag says so.
TEST_P(StepGraphOnDevice, AReplayedNonFiniteStepIsSkippedOnTheDevice) {
  Config cfg = graph_config();
  cfg.train.max_steps = StepGraph::kEagerSteps + 2;
  torch::manual_seed(4321);
  GPT model(cfg.model, 40);
  model->to(device());
  auto opt = make_optimizer(model, cfg.train);
  BatchSampler sampler(graph_tokens(), cfg.train.batch_size, cfg.model.block_size, 7);
  BatchSplit split(model, 1);
  StepGraph step_graph(model, *opt, cfg.train, device(), &split, !is_cuda());
  for (int s = 0; s < StepGraph::kEagerSteps + 1; ++s) step_graph.step(sampler, cfg.train.lr);  // the capture too
  {
    torch::NoGradGuard no_grad;
    model->wpe->weight[0][0].fill_(std::numeric_limits<float>::infinity());
  }
  const torch::Tensor before = model->wte->weight.detach().clone();
  const StepResult r = step_graph.step(sampler, cfg.train.lr);
  EXPECT_EQ(r.device_skipped.item<float>(), 1.0f);
  EXPECT_TRUE(torch::equal(model->wte->weight.detach(), before)) << "the skipped step changed no weight";
}

POSLAB_ON_EVERY_DEVICE(StepGraphOnDevice);

// After the capture the graph's batches have one shape: another is an error naming both.
TEST(StepGraph, ABatchOfAnotherShapeThanTheCapturedOneIsAnError) {
  if (!DeviceAdamW::unsupported(torch::kCPU).empty())
    GTEST_SKIP() << "no fused AdamW in this LibTorch: the pip leg runs it";
  const Config cfg = graph_config();
  GPT model(cfg.model, 40);
  auto opt = make_optimizer(model, cfg.train);
  BatchSampler sampler(graph_tokens(), cfg.train.batch_size, cfg.model.block_size, 7);
  StepGraph step_graph(model, *opt, cfg.train, torch::kCPU, nullptr, /*emulated=*/true);
  for (int s = 0; s < StepGraph::kEagerSteps + 1; ++s) step_graph.step(sampler, cfg.train.lr);
  const auto x = torch::zeros({2, cfg.model.block_size}, torch::kInt64);
  std::string msg;
  try {
    step_graph.step_on({{x, x}, {x, x}}, cfg.train.lr);
  } catch (const c10::Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("a micro-batch of shape [2, 16], the graph was captured with [4, 16]"), std::string::npos) << msg;
}

// What a graph needs, each named when missing.
TEST(StepGraph, SaysWhyItCannotRun) {
  const torch::Device gpu(torch::kCUDA, 0);
  Config cfg = graph_config();
  EXPECT_NE(cuda_graph_unsupported(cfg, torch::kCPU, 1).find("runs on a GPU (run.device: cuda), not on cpu"),
            std::string::npos);
  EXPECT_NE(cuda_graph_unsupported(cfg, gpu, 2).find("this run has 2"), std::string::npos);
  cfg.model.dropout = 0.1;
  EXPECT_NE(cuda_graph_unsupported(cfg, gpu, 1).find("model.dropout is 0.1"), std::string::npos);
  cfg.model.dropout = 0;
  cfg.train.adamw = "poslab";
  EXPECT_NE(cuda_graph_unsupported(cfg, gpu, 1).find("train.adamw is poslab"), std::string::npos);
  cfg.train.adamw = "auto";
  EXPECT_EQ(cuda_graph_unsupported(cfg, gpu, 1), DeviceAdamW::unsupported(gpu)) << "else what fused AdamW needs";
  cfg.train.cuda_graph = true;
  const std::string msg = test::error_of([&] { check_cuda_graph(cfg, torch::kCPU, 1); });
  EXPECT_NE(msg.find("train.cuda_graph = true: a CUDA graph runs on a GPU"), std::string::npos) << msg;
  EXPECT_NE(msg.find("set train.cuda_graph: false"), std::string::npos) << msg;
  cfg.train.cuda_graph = false;
  EXPECT_NO_THROW(check_cuda_graph(cfg, torch::kCPU, 1)) << "off, nothing is checked";
}

}  // namespace
}  // namespace poslab
