#include <gtest/gtest.h>

#include "config/config.h"
#include "model/gpt.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/optim.h"
#include "util/error.h"

namespace poslab {
namespace {

using test::TempDir;

Config small_config() {
  return load_config("", {"model.n_layer=1", "model.n_head=2", "model.n_embd=16", "model.block_size=8"});
}

TEST(Checkpoint, RoundTripGivesTheSameLogitsAndMeta) {
  TempDir dir;
  const Config cfg = small_config();
  torch::manual_seed(0);
  GPT model(cfg.model, 30);
  auto opt = make_optimizer(model, cfg.train);
  // one step so that the optimizer has state
  auto idx = torch::randint(0, 30, {2, 8}, torch::kInt64);
  GPTImpl::loss(model->forward(idx), idx).backward();
  opt->step();

  CheckpointMeta meta;
  meta.step = 17;
  meta.train_loss = 2.5;
  meta.val_loss = 2.75;
  meta.best_val_loss = 2.7;
  meta.config_yaml = to_yaml(cfg);
  meta.tokenizer_model = std::string("tok\0bytes", 9);
  meta.sampler_state = "1 2 3";
  save_checkpoint(dir / "c.pt", model, opt.get(), meta);

  torch::manual_seed(99);
  GPT other(cfg.model, 30);
  auto other_opt = make_optimizer(other, cfg.train);
  const CheckpointMeta back = load_checkpoint(dir / "c.pt", other, other_opt.get());
  EXPECT_EQ(back.step, 17);
  EXPECT_DOUBLE_EQ(back.train_loss, 2.5);
  EXPECT_DOUBLE_EQ(back.val_loss, 2.75);
  EXPECT_DOUBLE_EQ(back.best_val_loss, 2.7);
  EXPECT_EQ(back.tokenizer_model, meta.tokenizer_model);
  EXPECT_EQ(back.sampler_state, "1 2 3");
  EXPECT_EQ(back.config_yaml, meta.config_yaml);
  model->eval();
  other->eval();
  EXPECT_TRUE(torch::equal(model->forward(idx), other->forward(idx)));
  EXPECT_EQ(read_checkpoint_meta(dir / "c.pt").step, 17);
  EXPECT_FALSE(std::filesystem::exists(dir / "c.pt.tmp"));
}

TEST(Checkpoint, ArchitectureMismatchNamesWhatDiffers) {
  TempDir dir;
  Config cfg = small_config();
  GPT model(cfg.model, 30);
  CheckpointMeta meta;
  meta.config_yaml = to_yaml(cfg);
  save_checkpoint(dir / "c.pt", model, nullptr, meta);

  ModelConfig wider = cfg.model;
  wider.n_embd = 32;
  GPT other(wider, 30);
  try {
    load_checkpoint(dir / "c.pt", other, nullptr);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.n_embd 16 in the checkpoint vs 32"), std::string::npos) << e.what();
  }
  GPT other_vocab(cfg.model, 31);
  try {
    load_checkpoint(dir / "c.pt", other_vocab, nullptr);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("wte.weight"), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, MissingGarbageAndForeignFilesAreClearErrors) {
  TempDir dir;
  auto message = [](const std::string& path) {
    try {
      read_checkpoint_meta(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(dir / "none.pt").find("not found"), std::string::npos);
  test::write_text(dir / "garbage.pt", "this is not a zip archive");
  EXPECT_NE(message(dir / "garbage.pt").find("garbage.pt: not a readable checkpoint"), std::string::npos);
  torch::serialize::OutputArchive foreign;
  foreign.write("weights", torch::ones({2}));
  foreign.save_to(dir / "foreign.pt");
  EXPECT_NE(message(dir / "foreign.pt").find("not a poslab checkpoint"), std::string::npos);
}

TEST(Checkpoint, FailedWriteNamesThePathAndKeepsThePreviousFile) {
  TempDir dir;
  const Config cfg = small_config();
  GPT model(cfg.model, 30);
  CheckpointMeta meta;
  meta.step = 5;
  meta.config_yaml = to_yaml(cfg);
  save_checkpoint(dir / "latest.pt", model, nullptr, meta);
  // The temporary file cannot be created (a folder stands in its way; root ignores permission bits).
  std::filesystem::create_directories(dir / "latest.pt.tmp");
  meta.step = 6;
  try {
    save_checkpoint(dir / "latest.pt", model, nullptr, meta);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "latest.pt"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("previous checkpoint is intact"), std::string::npos) << e.hint();
  }
  EXPECT_EQ(read_checkpoint_meta(dir / "latest.pt").step, 5);
}

}  // namespace
}  // namespace poslab
