#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "config/config.h"
#include "model/gpt.h"
#include "test_devices.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/optim.h"
#include "util/cuda.h"
#include "util/error.h"
#include "util/fs.h"

namespace poslab {
namespace {

using test::TempDir;
namespace fs = std::filesystem;

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
  meta.corpus_hash = "fnv1a64:0123456789abcdef";
  meta.eval_step = 16;
  torch::manual_seed(5);
  meta.torch_rng_state = at::detail::getDefaultCPUGenerator().get_state();
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
  EXPECT_EQ(back.corpus_hash, meta.corpus_hash);
  EXPECT_EQ(back.eval_step, 16);
  EXPECT_TRUE(torch::equal(back.torch_rng_state, meta.torch_rng_state));
  model->eval();
  other->eval();
  EXPECT_TRUE(torch::equal(model->forward(idx), other->forward(idx)));
  // The optimizer's state came back too: the next step moves both models alike (AdamW's moments and step counts
  // decide it; a fresh optimizer's first step would be another).
  opt->zero_grad();  // the first step's gradients are still there
  for (auto* m : {&model, &other}) {
    (*m)->train();
    GPTImpl::loss((*m)->forward(idx), idx).backward();
  }
  opt->step();
  other_opt->step();
  const auto a = model->named_parameters(), b = other->named_parameters();
  for (const auto& p : a) EXPECT_TRUE(torch::equal(p.value(), b[p.key()])) << p.key();
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
  EXPECT_EQ(message("/dev/null"), "/dev/null: not a file (a device, pipe or socket), not a checkpoint");
  test::write_text(dir / "garbage.pt", "this is not a zip archive");
  // not a zip archive at all (a config, a log): another file, not a damaged checkpoint
  EXPECT_NE(message(dir / "garbage.pt").find("garbage.pt: not a checkpoint (a poslab checkpoint is a zip archive"),
            std::string::npos)
      << message(dir / "garbage.pt");
  test::write_text(dir / "cut.pt", std::string("PK\3\4", 4) + "cut short");  // a zip's start, then nothing
  EXPECT_NE(message(dir / "cut.pt").find("cut.pt: not a readable checkpoint (damaged"), std::string::npos);
  // A damaged checkpoint's hint names the run's other one, never the file itself.
  auto hint = [](const std::string& path) {
    try {
      read_checkpoint_meta(path);
    } catch (const Error& e) {
      return e.hint();
    }
    return std::string("no error");
  };
  std::filesystem::create_directories(dir / "checkpoints");
  test::write_text(dir / "checkpoints/best.pt", std::string("PK\3\4", 4) + "damaged");
  test::write_text(dir / "checkpoints/latest.pt", std::string("PK\3\4", 4) + "damaged");
  EXPECT_NE(hint(dir / "checkpoints/best.pt").find("e.g. latest.pt"), std::string::npos)
      << hint(dir / "checkpoints/best.pt");
  EXPECT_NE(hint(dir / "checkpoints/latest.pt").find("e.g. best.pt (to resume from it: copy it over latest.pt)"),
            std::string::npos)
      << hint(dir / "checkpoints/latest.pt");
  // where a run keeps its own, a file that is no zip archive (bytes overwritten) is a damaged checkpoint too
  test::write_text(dir / "checkpoints/latest.pt", "random bytes where the zip archive was");
  EXPECT_NE(message(dir / "checkpoints/latest.pt").find("latest.pt: not a readable checkpoint (damaged"),
            std::string::npos)
      << message(dir / "checkpoints/latest.pt");
  EXPECT_NE(hint(dir / "checkpoints/latest.pt").find("e.g. best.pt"), std::string::npos);
  // A folder is not "not found"; a file this user cannot read is not "damaged".
  EXPECT_NE(message(dir.str()).find(": is a folder, not a checkpoint"), std::string::npos) << message(dir.str());
  // A run's checkpoints/ folder holds checkpoints: one of them is named, and the run folder above it, however the
  // folder is written.
  EXPECT_NE(message(dir / "checkpoints").find("checkpoints: is a folder of checkpoints, not a checkpoint"),
            std::string::npos)
      << message(dir / "checkpoints");
  for (const std::string& written : {dir / "checkpoints", dir / "checkpoints/", dir / "checkpoints/../checkpoints"})
    EXPECT_NE(hint(written).find("e.g. " + dir / "checkpoints/latest.pt" + ", or the run folder above it (" +
                                 dir.str() + "), which stands for its latest.pt"),
              std::string::npos)
        << written << ": " << hint(written);
  {  // "." from inside it: the run folder is ".."
    const std::filesystem::path was = std::filesystem::current_path();
    std::filesystem::current_path(dir / "checkpoints");
    const std::string inside = hint(".");
    std::filesystem::current_path(was);
    EXPECT_NE(inside.find("e.g. latest.pt, or the run folder above it (..)"), std::string::npos) << inside;
  }
  // A folder of another name with a checkpoint in it is just a folder; a checkpoints/ folder with best.pt alone
  // names it, and no run folder (which stands for a latest.pt it lacks).
  std::filesystem::create_directories(dir / "saved");
  std::filesystem::copy_file(dir / "checkpoints/best.pt", dir / "saved/best.pt");
  EXPECT_NE(message(dir / "saved").find("saved: is a folder, not a checkpoint ("), std::string::npos)
      << message(dir / "saved");
  std::filesystem::create_directories(dir / "other/checkpoints");
  std::filesystem::copy_file(dir / "checkpoints/best.pt", dir / "other/checkpoints/best.pt");
  EXPECT_EQ(hint(dir / "other/checkpoints"), "pass one of them, e.g. " + dir / "other/checkpoints/best.pt");
  if (::geteuid() != 0) {  // root reads any file
    std::filesystem::permissions(dir / "garbage.pt", std::filesystem::perms::none);
    EXPECT_NE(message(dir / "garbage.pt").find("garbage.pt: cannot read the checkpoint: Permission denied"),
              std::string::npos);
  }
  torch::serialize::OutputArchive foreign;
  foreign.write("weights", torch::ones({2}));
  foreign.save_to(dir / "foreign.pt");
  EXPECT_NE(message(dir / "foreign.pt").find("not a poslab checkpoint"), std::string::npos);
}

// Rewrites a checkpoint's metadata with one entry replaced by `value` (undefined: left out).
void replace_entry(const std::string& path, const std::string& key, const torch::Tensor& value) {
  torch::serialize::InputArchive in;
  in.load_from(path);
  torch::serialize::OutputArchive out;
  for (const char* k : {"poslab_format", "step", "losses", "config_yaml", "tokenizer_model", "corpus_hash", "eval_step",
                        "sampler_state", "torch_rng_state", "cuda_rng_state"}) {
    torch::Tensor t;
    const bool there = in.try_read(k, t);  // corpus_hash and eval_step are optional entries
    if (k != key && there)
      out.write(k, t);
    else if (k == key && value.defined())
      out.write(k, value);
  }
  out.save_to(path);  // sub-archives (model, optimizer) cannot be copied: read_checkpoint_meta needs none
}

std::string load_error(const std::string& path, GPT& model, torch::optim::Optimizer* opt) {
  try {
    load_checkpoint(path, model, opt);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// Each case was a crash (an uncaught LibTorch error) found by tests/fuzz/fuzz_checkpoint.cpp.
TEST(Checkpoint, DamagedMetadataEntriesAreErrorsNamingTheEntry) {
  TempDir dir;
  const Config cfg = small_config();
  GPT model(cfg.model, 30);
  CheckpointMeta meta;
  meta.config_yaml = to_yaml(cfg);
  const std::vector<std::tuple<std::string, torch::Tensor, std::string>> cases = {
      {"config_yaml", torch::ones({4}, torch::kFloat32), "'config_yaml' is not a byte string (Float [4])"},
      {"tokenizer_model", torch::zeros({2, 2}, torch::kUInt8), "'tokenizer_model' is not a byte string"},
      {"poslab_format", torch::tensor(1.0), "'poslab_format' is not one integer (Float [])"},
      {"step", torch::tensor({1, 2}), "'step' is not one integer"},
      {"step", torch::tensor(int64_t{-3}), "'step' is negative (-3)"},
      {"losses", torch::zeros({2}, torch::kFloat64), "'losses' is not 3 floating-point numbers"},
      {"losses", torch::zeros({3}, torch::kInt64), "'losses' is not 3 floating-point numbers"},
      {"torch_rng_state", torch::zeros({7}, torch::kUInt8), "'torch_rng_state' is not a CPU generator state"},
      {"cuda_rng_state", torch::zeros({7}, torch::kUInt8), "'cuda_rng_state' is not a CUDA generator state (16 bytes)"},
      {"cuda_rng_state", torch::zeros({16}, torch::kFloat32), "'cuda_rng_state' is not a CUDA generator state"},
      {"sampler_state", torch::Tensor(), "checkpoint has no 'sampler_state' entry"},
      {"eval_step", torch::tensor(int64_t{9}), "'eval_step' is not a step of the run up to its step 0 (9)"},
      {"eval_step", torch::tensor(int64_t{-2}), "'eval_step' is not a step of the run up to its step 0 (-2)"},
      {"eval_step", torch::tensor(2.5), "'eval_step' is not one integer"},
      {"corpus_hash", torch::zeros({2, 2}, torch::kUInt8), "'corpus_hash' is not a byte string"},
  };
  for (const auto& [key, value, expected] : cases) {
    const std::string path = dir / (key + ".pt");
    save_checkpoint(path, model, nullptr, meta);
    replace_entry(path, key, value);
    std::string msg = "no error";
    try {
      read_checkpoint_meta(path);
    } catch (const Error& e) {
      msg = e.what();
    }
    EXPECT_NE(msg.find(path + ": "), std::string::npos) << msg;
    EXPECT_NE(msg.find(expected), std::string::npos) << key << ": " << msg;
  }
}

// A model whose table holds 1234.5678 everywhere, and where that weight's bytes first lie in a checkpoint's bytes:
// a byte of a known weight to change on disk.
constexpr float kMarkedWeight = 1234.5678f;
GPT model_with_marked_table(const Config& cfg) {
  GPT model(cfg.model, 30);
  torch::NoGradGuard no_grad;
  model->wpe->weight.fill_(kMarkedWeight);
  return model;
}
size_t marked_weight_at(const std::string& bytes) {
  return bytes.find(std::string(reinterpret_cast<const char*>(&kMarkedWeight), sizeof kMarkedWeight));
}

// A byte changed on disk after the checkpoint was written (a weight of the table here) is found by its record's
// CRC-32, which LibTorch's reader skips: every reader refuses the file, naming it, rather than load a wrong weight.
TEST(Checkpoint, AByteChangedOnDiskIsFoundByItsRecordsChecksum) {
  TempDir dir;
  const Config cfg = small_config();
  GPT model = model_with_marked_table(cfg);
  auto opt = make_optimizer(model, cfg.train);
  CheckpointMeta meta;
  meta.config_yaml = to_yaml(cfg);
  const std::string path = dir / "latest.pt";
  save_checkpoint(path, model, opt.get(), meta);
  std::string bytes = read_file(path);
  const size_t at = marked_weight_at(bytes);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 1] ^= 0x10;  // the weight becomes another finite number
  test::write_text(path, bytes);
  const std::vector<std::pair<std::string, std::function<void()>>> readers = {
      {"read_checkpoint_meta", [&] { read_checkpoint_meta(path); }},
      {"load_checkpoint", [&] { load_checkpoint(path, model, opt.get()); }},
      {"read_checkpoint_position_table", [&] { read_checkpoint_position_table(path); }},
  };
  for (const auto& [reader, read] : readers) {
    try {
      read();
      ADD_FAILURE() << reader << " read the changed file";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path + ": damaged: its record "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("does not match the CRC-32 written with it"), std::string::npos);
      EXPECT_NE(e.hint().find("best.pt (to resume from it: copy it over latest.pt)"), std::string::npos) << e.hint();
    }
  }
  bytes[at + 1] ^= 0x10;  // put back: read as before
  test::write_text(path, bytes);
  EXPECT_NO_THROW(load_checkpoint(path, model, opt.get()));
}

// A checkpoint whose records matched their CRC-32 is not read for them again in the process (a resume opens latest.pt
// twice) while it stays the same file: a byte changed since is found, even with its modification time set back (its
// change time, which no tool sets, tells). Two waits of 2 s: a file changed in the last second is checked every time.
TEST(Checkpoint, AFileCheckedOnceIsCheckedAgainOnceItChanges) {
  TempDir dir;
  const Config cfg = small_config();
  GPT model = model_with_marked_table(cfg);
  CheckpointMeta meta;
  meta.config_yaml = to_yaml(cfg);
  const std::string path = dir / "latest.pt";
  save_checkpoint(path, model, nullptr, meta);
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));  // past the second in which a file is checked always
  EXPECT_NO_THROW(read_checkpoint_meta(path));
  EXPECT_NO_THROW(read_checkpoint_meta(path));
  const auto written = fs::last_write_time(path);
  std::string bytes = read_file(path);
  const size_t at = marked_weight_at(bytes);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 1] ^= 0x10;
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);  // in place: the same inode and size
    f.seekp(static_cast<std::streamoff>(at + 1));
    f.put(bytes[at + 1]);
  }
  fs::last_write_time(path, written);
  EXPECT_EQ(fs::last_write_time(path), written);
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));  // the change, too, is settled: its time tells it
  EXPECT_NE(test::error_of([&] { read_checkpoint_meta(path); }).find(path + ": damaged: its record "),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { load_checkpoint(path, model, nullptr); }).find(path + ": damaged: its record "),
            std::string::npos);
}

// The CUDA generator's state is kept as bytes whatever the machine: written and read back with or without a GPU.
TEST(Checkpoint, CudaGeneratorStateIsKeptAsBytes) {
  TempDir dir;
  const Config cfg = small_config();
  GPT model(cfg.model, 30);
  CheckpointMeta meta;
  meta.config_yaml = to_yaml(cfg);
  meta.cuda_rng_state = torch::arange(kCudaRngStateBytes, torch::kInt64).mul(7).to(torch::kUInt8);
  save_checkpoint(dir / "c.pt", model, nullptr, meta);
  const CheckpointMeta back = read_checkpoint_meta(dir / "c.pt");
  ASSERT_EQ(back.cuda_rng_state.numel(), kCudaRngStateBytes);
  EXPECT_TRUE(torch::equal(back.cuda_rng_state, meta.cuda_rng_state));

  // A CPU run's checkpoint keeps an empty state; a checkpoint from before the entry existed reads as empty too.
  meta.cuda_rng_state = torch::Tensor();
  save_checkpoint(dir / "cpu.pt", model, nullptr, meta);
  EXPECT_EQ(read_checkpoint_meta(dir / "cpu.pt").cuda_rng_state.numel(), 0);
  save_checkpoint(dir / "old.pt", model, nullptr, meta);
  replace_entry(dir / "old.pt", "cuda_rng_state", torch::Tensor());
  EXPECT_EQ(read_checkpoint_meta(dir / "old.pt").cuda_rng_state.numel(), 0);

  // Without a GPU, restoring is a no-op (the run goes on on the CPU).
  if (!torch::cuda::is_available()) {
    EXPECT_NO_THROW(set_cuda_rng_state(back.cuda_rng_state, "c.pt"));
  }
}

class CheckpointOnDevice : public test::OnDevice {};

// A checkpoint written from a model and optimizer on the device opens on the CPU, with the same weights and moments.
TEST_P(CheckpointOnDevice, WrittenOnTheDeviceOpensOnTheCpu) {
  TempDir dir;
  const Config cfg = small_config();
  torch::manual_seed(0);
  GPT model(cfg.model, 30);
  model->to(device());
  auto opt = make_optimizer(model, cfg.train);
  auto idx = torch::randint(0, 30, {2, 8}, torch::kInt64).to(device());
  GPTImpl::loss(model->forward(idx), idx).backward();
  opt->step();
  CheckpointMeta meta;
  meta.config_yaml = to_yaml(cfg);
  meta.cuda_rng_state = is_cuda() ? cuda_rng_state() : torch::Tensor();  // as the trainer does
  save_checkpoint(dir / "c.pt", model, opt.get(), meta);

  GPT cpu_model(cfg.model, 30);
  auto cpu_opt = make_optimizer(cpu_model, cfg.train);
  load_checkpoint(dir / "c.pt", cpu_model, cpu_opt.get());
  const auto want = model->named_parameters();
  for (const auto& p : cpu_model->named_parameters()) {
    EXPECT_TRUE(p.value().device().is_cpu()) << p.key();
    EXPECT_TRUE(torch::equal(p.value(), want[p.key()].to(torch::kCPU))) << p.key();
  }
  // The AdamW moments came along, to the CPU.
  for (auto& [key, state] : cpu_opt->state())
    EXPECT_TRUE(static_cast<torch::optim::AdamWParamState&>(*state).exp_avg().device().is_cpu());
  EXPECT_EQ(read_checkpoint_meta(dir / "c.pt").cuda_rng_state.numel(), is_cuda() ? kCudaRngStateBytes : 0);
}

POSLAB_ON_EVERY_DEVICE(CheckpointOnDevice);

// On a GPU, the generator state restores the random stream dropout draws from (a CUDA case only).
class CudaGenerator : public test::OnDevice {};

TEST_P(CudaGenerator, StateRestoresTheRandomStream) {
  torch::manual_seed(3);
  const torch::Tensor state = cuda_rng_state();
  ASSERT_EQ(state.numel(), kCudaRngStateBytes);
  const torch::Tensor a = torch::rand({1000}, device());
  set_cuda_rng_state(state, "test");
  EXPECT_TRUE(torch::equal(torch::rand({1000}, device()), a));
  EXPECT_THROW(set_cuda_rng_state(torch::zeros({3}, torch::kUInt8), "test"), Error);
}

INSTANTIATE_TEST_SUITE_P(Devices, CudaGenerator, ::testing::Values("cuda"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(Checkpoint, ParameterOfAnotherDtypeAndDamagedOptimizerStateAreErrorsNamingThem) {
  TempDir dir;
  const Config cfg = small_config();
  CheckpointMeta meta;
  meta.config_yaml = to_yaml(cfg);
  {
    GPT model(cfg.model, 30);
    model->ln_f->weight.set_data(model->ln_f->weight.to(torch::kFloat64));
    save_checkpoint(dir / "dtype.pt", model, nullptr, meta);
  }
  GPT fresh(cfg.model, 30);
  std::string msg = load_error(dir / "dtype.pt", fresh, nullptr);
  EXPECT_NE(msg.find("parameter ln_f.weight is Double [16] in the checkpoint, the model expects Float [16]"),
            std::string::npos)
      << msg;

  {
    GPT model(cfg.model, 30);
    auto opt = make_optimizer(model, cfg.train);
    model->forward(torch::zeros({1, 4}, torch::kLong)).sum().backward();
    opt->step();
    for (auto& [key, state] : opt->state())
      static_cast<torch::optim::AdamWParamState&>(*state).exp_avg(torch::zeros({3}));
    save_checkpoint(dir / "adam.pt", model, opt.get(), meta);
  }
  GPT again(cfg.model, 30);
  auto opt = make_optimizer(again, cfg.train);
  msg = load_error(dir / "adam.pt", again, opt.get());
  EXPECT_NE(msg.find("optimizer state exp_avg of "), std::string::npos) << msg;
  EXPECT_NE(msg.find("is Float [3], the parameter is Float"), std::string::npos) << msg;
}

std::string tmp_name(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

// Saves step 5 to PATH, lets `block` stand in the way of the temporary file, then saves step 6: returns the
// error that second save gave ("what | hint"), or "" when it gave none.
std::string second_save_error(const std::string& path, const std::function<void(const std::string&)>& block) {
  const Config cfg = small_config();
  GPT model(cfg.model, 30);
  CheckpointMeta meta;
  meta.step = 5;
  meta.config_yaml = to_yaml(cfg);
  save_checkpoint(path, model, nullptr, meta);
  block(tmp_name(path));
  meta.step = 6;
  try {
    save_checkpoint(path, model, nullptr, meta);
  } catch (const Error& e) {
    return std::string(e.what()) + " | " + e.hint();
  }
  return "";
}

TEST(Checkpoint, FailedWriteNamesThePathAndKeepsThePreviousFile) {
  TempDir dir;
  // The temporary file cannot be created (a folder stands in its way; root ignores permission bits).
  const std::string msg =
      second_save_error(dir / "latest.pt", [](const std::string& tmp) { std::filesystem::create_directories(tmp); });
  ASSERT_FALSE(msg.empty()) << "expected an error";
  EXPECT_NE(msg.find(dir / "latest.pt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("previous checkpoint is intact"), std::string::npos) << msg;
  EXPECT_EQ(read_checkpoint_meta(dir / "latest.pt").step, 5);
}

// A real full disk: the temporary checkpoint is a link to /dev/full (every write fails with ENOSPC).
TEST(Checkpoint, DiskFullNamesThePathAndKeepsThePreviousFile) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "/dev/full is absent";
  TempDir dir;
  const std::string msg = second_save_error(
      dir / "latest.pt", [](const std::string& tmp) { std::filesystem::create_symlink("/dev/full", tmp); });
  ASSERT_FALSE(msg.empty()) << "expected an error";
  EXPECT_NE(msg.find(dir / "latest.pt: cannot write checkpoint: No space left on device"), std::string::npos) << msg;
  EXPECT_NE(msg.find("previous checkpoint is intact"), std::string::npos) << msg;
  EXPECT_EQ(read_checkpoint_meta(dir / "latest.pt").step, 5);
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(tmp_name(dir / "latest.pt"))));
}

TEST(Checkpoint, PositionTableIsReadWithoutTheModel) {
  TempDir dir;
  Config cfg = load_config("", {"model.n_layer=1", "model.n_head=2", "model.n_embd=16", "model.block_size=8"});
  GPT model(cfg.model, 20);
  CheckpointMeta meta;
  meta.config_yaml = to_yaml(cfg);
  save_checkpoint(dir / "c.pt", model, nullptr, meta);
  EXPECT_TRUE(torch::equal(read_checkpoint_position_table(dir / "c.pt"), model->wpe->weight));

  cfg.model.position = "none";
  GPT none(cfg.model, 20);
  meta.config_yaml = to_yaml(cfg);
  save_checkpoint(dir / "none.pt", none, nullptr, meta);
  try {
    read_checkpoint_position_table(dir / "none.pt");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no position table"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace poslab
