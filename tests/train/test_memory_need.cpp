#include "train/memory_need.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "model/gpt.h"
#include "test_devices.h"
#include "test_util.h"
#include "util/cuda.h"
#include "util/error.h"
#include "util/memory.h"

namespace poslab {
namespace {

int64_t numel_of(const ModelConfig& m, int64_t vocab) {
  GPT model(m, vocab);
  int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.numel();
  return n;
}

// configs/default.yaml's model: 4 layers, 4 heads, 128 channels, 128 positions.
Config default_shape() {
  Config cfg;
  cfg.model.n_layer = 4;
  cfg.model.n_head = 4;
  cfg.model.n_embd = 128;
  cfg.model.block_size = 128;
  return cfg;
}

// The count from the config alone equals the model's: the default config (1,071,872 parameters, as poslab inspect
// prints), odd sizes, no biases, each position variant.
TEST(MemoryNeed, CountsTheModelsParametersFromTheConfig) {
  Config cfg = default_shape();
  EXPECT_EQ(training_memory_need(cfg, 2048).parameters, 1071872);
  for (const bool bias : {true, false})
    for (const char* position : {"learned", "sinusoidal", "none"}) {
      cfg.model.n_layer = 3;
      cfg.model.n_head = 3;
      cfg.model.n_embd = 24;
      cfg.model.block_size = 17;
      cfg.model.bias = bias;
      cfg.model.position = position;
      EXPECT_EQ(training_memory_need(cfg, 61).parameters, numel_of(cfg.model, 61)) << position << " bias " << bias;
    }
}

TEST(MemoryNeed, SplitsTheModelStateAndTheActivations) {
  Config cfg;
  cfg.train.batch_size = 32;
  const MemoryNeed one = training_memory_need(cfg, 100);
  EXPECT_EQ(one.weights, 4 * one.parameters);
  EXPECT_EQ(one.gradients, one.weights);
  EXPECT_EQ(one.optimizer, 2 * one.weights);
  EXPECT_EQ(one.total(), one.weights + one.gradients + one.optimizer + one.activations);
  // Each of 4 processes keeps a quarter of the batch's activations; 4 micro-batches are 4 batches of batch_size,
  // taken one after another, each as large as one.
  EXPECT_EQ(training_memory_need(cfg, 100, 4).activations * 4, one.activations);
  cfg.train.grad_accum = 4;
  EXPECT_EQ(training_memory_need(cfg, 100).activations, one.activations);
}

// Scoring (poslab eval), beyond the loaded weights: per batch the logits and their log-softmax in float (and the
// bf16 logits under bf16), and the larger of a layer's attention scores (twice) and its MLP's hidden layer.
TEST(MemoryNeed, ScoringCountsTheLogitsAndTheLargestActivation) {
  Config cfg = default_shape();
  // B 8, T 128, V 2048: logits 8·8·128·2048; scores 8·8·4·128·128 = 4.19 MB against hidden 4·8·128·512 = 2.10 MB
  EXPECT_EQ(scoring_memory_need(cfg.model, 2048, 8, 128, false), 8LL * 8 * 128 * 2048 + 8LL * 8 * 4 * 128 * 128);
  EXPECT_EQ(scoring_memory_need(cfg.model, 2048, 8, 128, true), 10LL * 8 * 128 * 2048 + 8LL * 8 * 4 * 128 * 128);
  // The batch the hunt tried (100,000 windows) stops before anything runs, naming the option and the sizes.
  const MemoryRoom room{int64_t(24) << 30, "the machine's available memory (MemAvailable)"};
  test::ScopedEnv no_skip("POSLAB_NO_MEMORY_CHECK", nullptr);
  const std::string e =
      test::error_of([&] { check_scoring_fits(cfg.model, 2048, 100000, 128, false, "--batch-size 100000", room); });
  EXPECT_NE(e.find("--batch-size 100000: one batch of 100000 windows of 128 tokens needs at least"), std::string::npos)
      << e;
  EXPECT_NE(e.find("pass a smaller --batch-size"), std::string::npos) << e;
  EXPECT_NO_THROW(check_scoring_fits(cfg.model, 2048, 32, 128, false, "--batch-size 32", room));
}

TEST(MemoryNeed, AModelThatCannotFitStopsWithBothSizesAndAHint) {
  Config cfg;  // ~6e12 parameters: 100 TB of model state, more than any machine here
  cfg.model.n_layer = 7000;
  cfg.model.n_embd = 8192;
  cfg.model.n_head = 64;
  const std::string msg = test::error_of([&] { check_training_fits(cfg, 2048, 1, memory_room(1)); });
  EXPECT_NE(msg.find("model.n_layer 7000, n_embd 8192"), std::string::npos) << msg;
  EXPECT_NE(msg.find("training needs at least "), std::string::npos) << msg;
  EXPECT_NE(msg.find(" but this process may use "), std::string::npos) << msg;
  try {
    check_training_fits(cfg, 2048, 1, memory_room(1));
  } catch (const Error& e) {
    EXPECT_NE(e.hint().find("the model alone does not fit"), std::string::npos) << e.hint();
  }
  // A small model with a huge batch: the activations are what to cut.
  Config wide;
  wide.train.batch_size = 1 << 30;
  try {
    check_training_fits(wide, 2048, 1, memory_room(1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.hint().find("the activations do not fit"), std::string::npos) << e.hint();
  }
  // Sizes whose products pass int64's end (2·10⁹ sequences of 65,536 rows of 2,048): more than any machine, not a
  // product wrapped to a small or negative number that passes.
  Config huge;
  huge.model.n_embd = 2048;
  huge.model.n_head = 16;
  huge.model.block_size = 65536;
  huge.train.batch_size = 2000000000;
  EXPECT_GE(training_memory_need(huge, 2048).activations, int64_t{1} << 60);
  EXPECT_GT(training_memory_need(huge, 2048).total(), 0);
  EXPECT_NE(test::error_of([&] { check_training_fits(huge, 2048, 1, memory_room(1)); }).find("training needs at least"),
            std::string::npos);
  EXPECT_GE(scoring_memory_need(huge.model, 2048, 2000000000, 65536, false), int64_t{1} << 60);
  ::setenv("POSLAB_NO_MEMORY_CHECK", "1", 1);
  EXPECT_NO_THROW(check_training_fits(cfg, 2048, 1, memory_room(1)));
  ::unsetenv("POSLAB_NO_MEMORY_CHECK");
  Config fits;  // the default model fits any machine that runs the tests
  EXPECT_NO_THROW(check_training_fits(fits, 2048, 1, memory_room(1)));
}

// bf16 autocast keeps the activations in bf16: half the bytes; the model state stays float32.
TEST(MemoryNeed, Bf16HalvesTheActivationsButNotTheModelState) {
  Config cfg;
  const MemoryNeed f32 = training_memory_need(cfg, 2048);
  cfg.train.dtype = "bfloat16";
  const MemoryNeed bf16 = training_memory_need(cfg, 2048);
  EXPECT_EQ(bf16.activations * 2, f32.activations);
  EXPECT_EQ(bf16.weights + bf16.gradients + bf16.optimizer, f32.weights + f32.gradients + f32.optimizer);
}

Config gpt2_small() {  // configs/gpt2_small.yaml's shape, GPT-2's batch of 32
  return load_config("", {"model.n_layer=12", "model.n_head=12", "model.n_embd=768", "model.block_size=1024",
                          "train.batch_size=32", "train.dtype=bfloat16"});
}

// A GPU's stated free size: GPT-2 small's shape (batch 32 x 1,024 tokens, bf16) needs 11.9 GB by the estimate
// (124 million parameters: 2.0 GB of model state, 9.7 GB of activations); it fits the 137 GB an idle H200 has free,
// not 8 GB of an A100 that other processes fill, and not 1 GB.
TEST(MemoryNeed, AGpuThatCannotHoldTheRunStopsNamingItsFreeMemory) {
  const Config cfg = gpt2_small();
  const MemoryNeed need = training_memory_need(cfg, 50257);
  EXPECT_EQ(need.parameters, 124439808);  // GPT-2 small's count (wte 38.6M + wpe 0.8M + 12 blocks of 7.1M + ln_f)
  EXPECT_NEAR(static_cast<double>(need.total()), 11.7e9, 0.1e9);
  EXPECT_NO_THROW(
      check_training_fits(cfg, 50257, 1, gpu_memory_room(137'000'000'000, 150'000'000'000, "NVIDIA H200"), true));
  const MemoryRoom a100 =
      gpu_memory_room(8'000'000'000, 85'000'000'000, "NVIDIA A100-SXM4-80GB (sm_80, 108 SMs, 79.2 GiB)");
  try {
    check_training_fits(cfg, 50257, 1, a100, true);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("training needs at least 12 GB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("but the GPU has 8.0 GB, the free memory of the GPU (NVIDIA A100-SXM4-80GB (sm_80, 108 SMs, "
                       "79.2 GiB): 8.0 GB of 85 GB free)"),
              std::string::npos)
        << msg;
    EXPECT_NE(e.hint().find("the activations do not fit"), std::string::npos) << e.hint();
    EXPECT_NE(e.hint().find("nvidia-smi"), std::string::npos) << e.hint();
  }
  try {
    check_training_fits(cfg, 50257, 1, gpu_memory_room(1'000'000'000, 85'000'000'000, "NVIDIA A100"), true);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.hint().find("the model alone does not fit"), std::string::npos) << e.hint();
  }
  // Two processes share the batch: each GPU holds half the activations, and 8 GB is then enough.
  EXPECT_NO_THROW(check_training_fits(cfg, 50257, 2, a100, true));
  // No GPU (free -1): nothing to check against.
  EXPECT_NO_THROW(check_training_fits(cfg, 50257, 1, gpu_memory_room(-1, -1, ""), true));
}

class MemoryOnDevice : public test::OnDevice {
 protected:
  MemoryRoom room() const { return is_cuda() ? cuda_memory_room() : memory_room(1); }
};

// The check against the device the run trains on: the GPU's real free memory (cudaMemGetInfo) on CUDA.
TEST_P(MemoryOnDevice, TheCheckReadsTheRunsDevice) {
  Config huge;  // 100 TB of model state
  huge.model.n_layer = 7000;
  huge.model.n_embd = 8192;
  huge.model.n_head = 64;
  const std::string msg = test::error_of([&] { check_training_fits(huge, 2048, 1, room(), is_cuda()); });
  EXPECT_NE(msg.find(is_cuda() ? "the free memory of the GPU (" : "this process may use "), std::string::npos) << msg;
  EXPECT_NO_THROW(check_training_fits(Config(), 2048, 1, room(), is_cuda()));
}
POSLAB_ON_EVERY_DEVICE(MemoryOnDevice);

}  // namespace
}  // namespace poslab
