#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "bench/bench.h"
#include "config/config.h"
#include "data/batches.h"
#include "formats/npy.h"
#include "model/gpt.h"
#include "ops/bf16_products.h"
#include "test_devices.h"
#include "test_util.h"
#include "util/fs.h"

namespace poslab {
namespace {

TEST(Bench, FlopsPerTokenIsNanoGptsEstimate) {
  ModelConfig m;
  m.n_layer = 4;
  m.n_embd = 128;
  m.block_size = 64;
  EXPECT_DOUBLE_EQ(flops_per_token(1000, m), 6.0 * 1000 + 12.0 * 4 * 128 * 64);
}

class BenchOnDevice : public test::OnDevice {};

// The peak rate is the device's own: a GPU's products are timed between synchronisations, so MFU is not 0.
TEST_P(BenchOnDevice, ReportsTheDevicesMatmulRateAndMfu) {
  EXPECT_GT(matmul_gflops("float32", 256, 2, device_name()), 0);
  const Config cfg =
      load_config("", {"model.n_layer=1", "model.n_head=2", "model.n_embd=16", "model.block_size=8",
                       "train.batch_size=4", "data.tokenizer.vocab_size=50", "run.device=" + device_name()});
  BenchOptions opt;
  opt.steps = 2;
  opt.warmup = 1;
  const auto j = run_bench(cfg, opt);
  EXPECT_EQ(j["device"], device_name());
  EXPECT_GT(j["matmul_gflops"].get<double>(), 0);
  EXPECT_GT(j["mfu"].get<double>(), 0);
  EXPECT_EQ(j["gpu"].get<std::string>().empty(), !is_cuda());
}

POSLAB_ON_EVERY_DEVICE(BenchOnDevice);

// A model that cannot fit stops before anything is allocated, as train's does (38.7 billion parameters: 722 GB).
TEST(Bench, AModelThatCannotFitStopsBeforeItRuns) {
  test::ScopedEnv checked("POSLAB_NO_MEMORY_CHECK", nullptr);
  BenchOptions opt;
  opt.steps = 1;
  opt.warmup = 0;
  const std::string msg = test::error_of([&] {
    run_bench(load_config("", {"model.n_layer=48", "model.n_embd=8192", "model.n_head=64", "run.device=cpu",
                               "train.dtype=float32"}),
              opt);
  });
  EXPECT_NE(msg.find("model.n_layer 48, n_embd 8192, block_size 64, train.batch_size 32: training needs at least "),
            std::string::npos)
      << msg;
}

// bench's text: 200,000 ids below the vocabulary, or 4 windows where those are longer (block_size 50,000 and up:
// 60,000 stopped bench with "200000 tokens cannot fill a window"); the same seed, the same stream.
TEST(Bench, ItsRandomTextFillsAnyWindow) {
  const std::vector<int32_t> short_windows = random_tokens(50, 8, 1);
  EXPECT_EQ(short_windows.size(), 200000u);
  EXPECT_EQ(*std::min_element(short_windows.begin(), short_windows.end()), 0);
  EXPECT_EQ(*std::max_element(short_windows.begin(), short_windows.end()), 49);
  EXPECT_EQ(random_tokens(50, 8, 1), short_windows);
  EXPECT_NE(random_tokens(50, 8, 2), short_windows);
  EXPECT_EQ(random_tokens(50, 49999, 1).size(), 200000u);
  const std::vector<int32_t> long_windows = random_tokens(50, 60000, 1);
  EXPECT_EQ(long_windows.size(), 240004u);
  BatchSampler sampler(long_windows, 1, 60000, 1);
  EXPECT_EQ(sampler.next().first.size(1), 60000);
}

// An MFU is at most 100 %: above it the peak measured low, and the words say so rather than print the figure.
TEST(Bench, AnMfuAboveOneIsNamedNotPrinted) {
  EXPECT_EQ(mfu_words(0.523), "MFU 52.3%");
  EXPECT_EQ(mfu_words(1.0), "MFU 100.0%");
  const std::string high = mfu_words(1.699);
  EXPECT_EQ(high.rfind("MFU unknown (the model ran at 170% of the matmul peak measured", 0), 0u) << high;
  EXPECT_NE(high.find("run again"), std::string::npos) << high;
}

// In bf16 on a CPU the report names how the products ran: in float (the kernel path bf16_products=float)
// or through oneDNN; in float32 the field is empty.
TEST(Bench, NamesHowBf16ProductsRan) {
  const std::vector<Override> tiny = {"model.n_layer=1",    "model.n_head=2",     "model.n_embd=16",
                                      "model.block_size=8", "train.batch_size=4", "data.tokenizer.vocab_size=50",
                                      "run.device=cpu"};
  BenchOptions opt;
  opt.steps = 1;
  opt.warmup = 0;
  auto sets = tiny;
  sets.push_back("train.dtype=bfloat16");
  const auto j = run_bench(load_config("", sets), opt);
  EXPECT_EQ(j["bf16_products"].get<std::string>(),
            bf16_products_in_float() ? "float (bf16 operands widened, results rounded)" : "onednn");
  EXPECT_GT(j["mfu"].get<double>(), 0);
  EXPECT_EQ(run_bench(load_config("", tiny), opt)["bf16_products"].get<std::string>(), "");
}

TEST(Bench, ReportsFiguresAndExportsForTheReference) {
  test::TempDir dir;
  const Config cfg = load_config("", {"model.n_layer=1", "model.n_head=2", "model.n_embd=16", "model.block_size=8",
                                      "train.batch_size=4", "data.tokenizer.vocab_size=50", "run.device=cpu"});
  BenchOptions opt;
  opt.steps = 2;
  opt.warmup = 1;
  opt.export_dir = dir / "export";
  const auto j = run_bench(cfg, opt);
  EXPECT_EQ(j["tokens_per_step"], 4 * 8);
  EXPECT_GT(j["tokens_per_s"].get<double>(), 0);
  EXPECT_GT(j["matmul_gflops"].get<double>(), 0);
  EXPECT_GT(j["mfu"].get<double>(), 0);
  EXPECT_EQ(j["losses"].size(), 3u);
  // The figures are one measurement: per step over the 2 timed steps, the model's FLOPs at that rate, over the peak.
  const double ms = j["ms_per_step"].get<double>(), tok_s = j["tokens_per_s"].get<double>();
  EXPECT_NEAR(tok_s * ms / 1000.0, 32.0, 1e-9 * 32) << "tokens_per_s is tokens_per_step per ms_per_step";
  EXPECT_DOUBLE_EQ(j["model_gflop_per_step"].get<double>(),
                   flops_per_token(j["params_without_wpe"].get<int64_t>(), cfg.model) * 32 / 1e9);
  EXPECT_NEAR(j["achieved_gflops"].get<double>(), j["model_gflop_per_step"].get<double>() * 1000.0 / ms,
              1e-9 * j["achieved_gflops"].get<double>());
  EXPECT_DOUBLE_EQ(j["mfu"].get<double>(), j["achieved_gflops"].get<double>() / j["matmul_gflops"].get<double>());
  EXPECT_NEAR(j["losses"][0].get<double>(), std::log(50.0), 0.3);  // untrained: near uniform
  // What the reference (scripts/bench_vs_pytorch.py) reads: the figures as returned; the 3 steps' windows of B 4 and
  // T + 1 9 ids, in the order the sampler draws them; the weights the steps start from.
  EXPECT_EQ(nlohmann::json::parse(read_file(dir / "export/bench.json")), j);
  const NpyArray batches = read_npy(dir / "export/batches.npy");
  ASSERT_EQ(batches.shape, (std::vector<int64_t>{3 * 4, 9}));
  BatchSampler sampler(random_tokens(50, 8, static_cast<uint64_t>(cfg.run.seed)), 4, 8,
                       static_cast<uint64_t>(cfg.run.seed));
  for (int64_t step = 0; step < 3; ++step) {
    const auto [x, y] = sampler.next();
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t t = 0; t < 9; ++t)
        ASSERT_EQ(batches.data[static_cast<size_t>(((step * 4 + r) * 9) + t)],
                  t < 8 ? x[r][t].item<int64_t>() : y[r][7].item<int64_t>())
            << "step " << step << " row " << r << " position " << t;
  }
  torch::manual_seed(static_cast<uint64_t>(cfg.run.seed));
  GPT start(cfg.model, 50);
  for (const auto& p : start->named_parameters()) {
    const NpyArray w = read_npy(dir / ("export/init/" + p.key() + ".npy"));
    const torch::Tensor expected = p.value().reshape({w.shape[0], -1}).to(torch::kFloat64);
    ASSERT_EQ(w.shape[1], expected.size(1)) << p.key();
    EXPECT_TRUE(torch::equal(torch::tensor(w.data, torch::kFloat64).reshape({w.shape[0], w.shape[1]}), expected))
        << p.key();
  }
}

// train.cuda_graph where there is no GPU: an error naming the key before anything is measured or exported.
TEST(Bench, ACudaGraphWithoutAGpuIsAnErrorBeforeAnythingRuns) {
  test::TempDir dir;
  Config cfg = load_config("", {"model.n_layer=1", "model.n_head=2", "model.n_embd=16", "model.block_size=8",
                                "train.batch_size=4", "train.cuda_graph=true"});
  cfg.run.device = "cpu";  // as on a machine without a GPU (a config with both is refused as it loads)
  BenchOptions opt;
  opt.steps = 1;
  opt.export_dir = dir / "export";
  const std::string msg = test::error_of([&] { run_bench(cfg, opt); });
  EXPECT_NE(msg.find("train.cuda_graph = true: a CUDA graph runs on a GPU"), std::string::npos) << msg;
  EXPECT_FALSE(std::filesystem::exists(dir / "export")) << "nothing exported";
}

}  // namespace
}  // namespace poslab
