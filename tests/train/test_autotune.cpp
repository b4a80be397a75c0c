// Choosing the kernel paths by measurement (train/autotune.h): the search with known timings picks the fastest
// beyond the noise margin and always tries LibTorch's own paths; a run's choice is forced by run.kernels or
// POSLAB_KERNELS, and a measured one is cached, read back, and measured over when the cache is damaged.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "model/gpt.h"
#include "test_util.h"
#include "train/autotune.h"
#include "train/step.h"
#include "util/fs.h"

namespace poslab {
namespace {

using test::TempDir;

// A timer from a table of known milliseconds by paths (10 ms for any not listed); records what it timed.
struct FakeTimer {
  std::map<std::string, double> ms;
  std::vector<std::string> timed;
  PathTimer timer() {
    return [this](const KernelPaths& p) {
      timed.push_back(to_string(p));
      const auto it = ms.find(to_string(p));
      return it == ms.end() ? 10.0 : it->second;
    };
  }
};

TEST(Autotune, TheSearchKeepsWhatIsFasterBeyondTheMarginAndTriesLibTorchsPaths) {
  const KernelPaths start = default_kernel_paths(true);  // onednn, fused, fused, threads
  const std::string S = ",batch_split=threads", N = ",batch_split=none";
  FakeTimer t;
  t.ms["bf16_products=float,attention=fused,pointwise=fused" + S] = 9.9;      // 1 % faster: noise, not taken
  t.ms["bf16_products=onednn,attention=libtorch,pointwise=fused" + S] = 9.0;  // 10 % faster: taken
  t.ms["bf16_products=onednn,attention=libtorch,pointwise=libtorch" + S] = 9.5;
  t.ms["bf16_products=onednn,attention=libtorch,pointwise=fused" + N] = 8.5;  // 5.6 % faster again: taken
  KernelTuning r = search_kernel_paths(start, t.timer(), {});
  EXPECT_EQ(to_string(r.chosen), "bf16_products=onednn,attention=libtorch,pointwise=fused" + N);
  // start, one alternative per choice, then LibTorch's paths as a whole
  EXPECT_EQ(t.timed, (std::vector<std::string>{"bf16_products=onednn,attention=fused,pointwise=fused" + S,
                                               "bf16_products=float,attention=fused,pointwise=fused" + S,
                                               "bf16_products=onednn,attention=libtorch,pointwise=fused" + S,
                                               "bf16_products=onednn,attention=libtorch,pointwise=libtorch" + S,
                                               "bf16_products=onednn,attention=libtorch,pointwise=fused" + N,
                                               "bf16_products=onednn,attention=libtorch,pointwise=libtorch" + N}));
  EXPECT_EQ(r.timings.size(), 6u);
  EXPECT_NE(tuning_text(r).find("<- chosen"), std::string::npos);

  // LibTorch's paths win as a whole when each piece alone does not
  FakeTimer all;
  all.ms[to_string(libtorch_kernel_paths())] = 8.0;
  r = search_kernel_paths(start, all.timer(), {});
  EXPECT_EQ(r.chosen, libtorch_kernel_paths());
  EXPECT_EQ(all.timed.size(), 6u);  // start, one alternative for each of the four choices, LibTorch's

  // fixed choices are not timed and keep the start's value, in LibTorch's paths too; all equal: the defaults stay
  FakeTimer f32;
  r = search_kernel_paths(default_kernel_paths(false), f32.timer(), {"bf16_products", "batch_split"});
  for (const auto& s : f32.timed) {
    EXPECT_NE(s.find("bf16_products=float"), std::string::npos) << s;
    EXPECT_NE(s.find("batch_split=threads"), std::string::npos) << s;
  }
  EXPECT_EQ(f32.timed.size(), 4u);  // start, attention, pointwise, LibTorch's (with the fixed two)
  EXPECT_EQ(r.chosen, default_kernel_paths(false));
}

Config tiny_config(const TempDir& dir) {
  Config c;
  c.model.n_layer = 1;
  c.model.n_head = 2;
  c.model.n_embd = 32;
  c.model.block_size = 16;
  c.train.batch_size = 4;
  c.train.dtype = "float32";
  c.data.cache_dir = dir / "cache";
  return c;
}

TEST(Autotune, ARunsChoiceIsForcedOrMeasuredOnceAndCached) {
  TempDir dir;
  // these cases set run.kernels: POSLAB_KERNELS (which the tests' main sets) is put aside for them
  const char* env = std::getenv("POSLAB_KERNELS");
  const std::string saved_env = env ? env : "";
  unsetenv("POSLAB_KERNELS");
  const KernelPaths before = kernel_paths();
  Config cfg = tiny_config(dir);
  GPT model(cfg.model, 64);
  BatchSplit split(model, 1);
  const torch::Device cpu(torch::kCPU);

  cfg.run.kernels = "attention=libtorch";
  KernelTuning t = choose_kernel_paths(model, split, cfg, cpu, 1);
  EXPECT_EQ(t.how, "run.kernels = attention=libtorch");
  EXPECT_TRUE(t.timings.empty());
  EXPECT_EQ(kernel_paths().attention, "libtorch");
  EXPECT_FALSE(std::filesystem::exists(kernel_cache_path(cfg)));

  cfg.run.kernels = "auto";
  t = choose_kernel_paths(model, split, cfg, cpu, 1);
  EXPECT_EQ(t.how.rfind("measured in ", 0), 0u) << t.how;
  EXPECT_GE(t.timings.size(), 3u);  // float32, unsplit: start, attention, pointwise, (LibTorch's)
  for (const PathTiming& p : t.timings) EXPECT_GT(p.ms, 0.0);
  ASSERT_TRUE(std::filesystem::exists(kernel_cache_path(cfg)));
  const KernelTuning again = choose_kernel_paths(model, split, cfg, cpu, 1);
  EXPECT_EQ(again.how.rfind("cached (", 0), 0u) << again.how;
  EXPECT_EQ(again.chosen, t.chosen);
  EXPECT_EQ(again.timings.size(), t.timings.size());
  EXPECT_EQ(again.key, t.key);
  EXPECT_NE(t.key.find("layers 1 heads 2 embd 32 block 16 vocab 64 batch 4 threads 1"), std::string::npos) << t.key;

  cfg.run.kernels = "measure";  // measures even with a cache entry
  EXPECT_EQ(choose_kernel_paths(model, split, cfg, cpu, 1).how.rfind("measured in ", 0), 0u);

  write_file_atomic(kernel_cache_path(cfg), "{\"" + t.key + "\": {\"paths\": \"attention=warp\"}}");
  cfg.run.kernels = "auto";  // a damaged entry: measured over (a warning names the file), and rewritten
  EXPECT_EQ(choose_kernel_paths(model, split, cfg, cpu, 1).how.rfind("measured in ", 0), 0u);
  EXPECT_EQ(choose_kernel_paths(model, split, cfg, cpu, 1).how.rfind("cached (", 0), 0u);

  setenv("POSLAB_KERNELS", "pointwise=libtorch", 1);  // the environment wins over run.kernels
  t = choose_kernel_paths(model, split, cfg, cpu, 1);
  EXPECT_EQ(t.how, "POSLAB_KERNELS = pointwise=libtorch");
  EXPECT_EQ(kernel_paths().pointwise, "libtorch");
  set_kernel_paths(before);
  if (env) setenv("POSLAB_KERNELS", saved_env.c_str(), 1); else unsetenv("POSLAB_KERNELS");
}

}  // namespace
}  // namespace poslab
