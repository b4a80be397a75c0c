#include "train/memory_need.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "model/gpt.h"
#include "test_util.h"
#include "util/error.h"

namespace poslab {
namespace {

int64_t numel_of(const ModelConfig& m, int64_t vocab) {
  GPT model(m, vocab);
  int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.numel();
  return n;
}

// The count from the config alone equals the model's: the default config (1,071,872 parameters, as poslab inspect
// prints), odd sizes, no biases, each position variant.
TEST(MemoryNeed, CountsTheModelsParametersFromTheConfig) {
  Config cfg;
  cfg.model.n_layer = 4;
  cfg.model.n_head = 4;
  cfg.model.n_embd = 128;
  cfg.model.block_size = 128;
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
  // Each of 4 processes, or each of 4 micro-batches, keeps a quarter of the batch's activations.
  EXPECT_EQ(training_memory_need(cfg, 100, 4).activations * 4, one.activations);
  cfg.train.grad_accum = 4;
  EXPECT_EQ(training_memory_need(cfg, 100).activations * 4, one.activations);
}

TEST(MemoryNeed, AModelThatCannotFitStopsWithBothSizesAndAHint) {
  Config cfg;  // ~6e12 parameters: 100 TB of model state, more than any machine here
  cfg.model.n_layer = 7000;
  cfg.model.n_embd = 8192;
  cfg.model.n_head = 64;
  const std::string msg = test::error_of([&] { check_training_fits(cfg, 2048, 1, 1); });
  EXPECT_NE(msg.find("model.n_layer 7000, n_embd 8192"), std::string::npos) << msg;
  EXPECT_NE(msg.find("training needs at least "), std::string::npos) << msg;
  EXPECT_NE(msg.find(" but this process may use "), std::string::npos) << msg;
  try {
    check_training_fits(cfg, 2048, 1, 1);
  } catch (const Error& e) {
    EXPECT_NE(e.hint().find("the model alone does not fit"), std::string::npos) << e.hint();
  }
  // A small model with a huge batch: the activations are what to cut.
  Config wide;
  wide.train.batch_size = 1 << 30;
  try {
    check_training_fits(wide, 2048, 1, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.hint().find("the activations do not fit"), std::string::npos) << e.hint();
  }
  ::setenv("POSLAB_NO_MEMORY_CHECK", "1", 1);
  EXPECT_NO_THROW(check_training_fits(cfg, 2048, 1, 1));
  ::unsetenv("POSLAB_NO_MEMORY_CHECK");
  Config fits;  // the default model fits any machine that runs the tests
  EXPECT_NO_THROW(check_training_fits(fits, 2048, 1, 1));
}

}  // namespace
}  // namespace poslab
