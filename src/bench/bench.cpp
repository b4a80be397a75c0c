#include "bench/bench.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "analysis/snapshot_hook.h"
#include "bench/trace_profile.h"
#include "data/batches.h"
#include "formats/npy.h"
#include "model/gpt.h"
#include "ops/autocast.h"
#include "ops/bf16_products.h"
#include "train/memory_need.h"
#include "train/optim.h"
#include "train/schedule.h"
#include "train/step.h"
#include "train/step_graph.h"
#include "tune/autotune.h"
#include "util/cuda.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_text.h"
#include "util/memory.h"
#include "util/output_paths.h"
#include "util/platform.h"
#include "util/version.h"

namespace poslab {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double flops_per_token(int64_t n, const ModelConfig& m) {
  return 6.0 * static_cast<double>(n) + 12.0 * m.n_layer * m.n_embd * m.block_size;
}

double matmul_gflops(const std::string& dtype, int64_t n, int reps, const std::string& device) {
  torch::NoGradGuard no_grad;
  const bool cuda = device == "cuda";
  // The machine's peak: every core in the BLAS too, whatever the training uses.
  const int previous = blas_threads();
  if (!cuda) set_blas_threads(torch::get_num_threads());
  // bf16 on a CPU without bf16 hardware: the model's products run in float (bf16_products.h), so float's rate is
  // the peak they can reach (the conversions around them count against the MFU).
  const bool widened = !cuda && dtype == "bfloat16" && bf16_products_in_float();
  const auto options = torch::TensorOptions()
                           .dtype(dtype == "bfloat16" && !widened ? torch::kBFloat16 : torch::kFloat32)
                           .device(cuda ? torch::kCUDA : torch::kCPU);
  auto a = torch::randn({n, n}, options), b = torch::randn({n, n}, options);
  auto sync = [cuda] {
    if (cuda) torch::cuda::synchronize();
  };
  auto c = torch::matmul(a, b);  // warm up (cuBLAS picks its kernel, oneDNN builds its primitive)
  sync();
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    c = torch::matmul(a, b);
    sync();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, 2.0 * n * n * n / s / 1e9);
  }
  if (!cuda && previous > 0) set_blas_threads(previous);
  return best;
}

std::string mfu_words(double mfu) {
  if (!(mfu > 1)) return fmt::format("MFU {:.1f}%", 100 * mfu);
  return fmt::format(
      "MFU unknown (the model ran at {:.0f}% of the matmul peak measured: the machine was busy while the peak was "
      "measured; run again)",
      100 * mfu);
}

namespace {

// The matrix side for the peak rate: 1024 on a CPU; 8192 on a GPU, whose peak needs large products.
int64_t peak_matmul_size(const std::string& device) { return device == "cuda" ? 8192 : 1024; }

void export_matrix(const std::string& path, const torch::Tensor& t) {
  auto m = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  m = m.dim() == 1 ? m.unsqueeze(0) : m.reshape({m.size(0), -1});
  write_file_atomic(path, npy_bytes(m.data_ptr<float>(), m.size(0), m.size(1)));
}

// The initial weights (DIR/init/NAME.npy) and the `micro_batches` windows the steps will draw (DIR/batches.npy).
void export_start(const std::string& dir, GPT& model, const BatchSampler& sampler, int micro_batches) {
  make_dirs(dir + "/init");
  for (const auto& p : model->named_parameters()) export_matrix(dir + "/init/" + p.key() + ".npy", p.value());
  BatchSampler copy = sampler;  // the same windows the steps will draw
  std::vector<torch::Tensor> xs;
  for (int s = 0; s < micro_batches; ++s) {
    auto [x, y] = copy.next();
    xs.push_back(torch::cat({x, y.slice(1, -1)}, 1));  // (B, T + 1)
  }
  export_matrix(dir + "/batches.npy", torch::cat(xs, 0).to(torch::kFloat32));  // ids < 2^24: exact
}

struct StepTimes {
  std::vector<double> losses;  // every step's, the warmup's included
  double timed_seconds = 0;    // wall time of the steps after the warmup
};

// opt.warmup + opt.steps updates (t.max_steps of them), the timed ones under LibTorch's profiler when asked.
StepTimes run_steps(GPT& model, torch::optim::AdamW& optimizer, BatchSampler& sampler, const TrainConfig& t,
                    BatchSplit& split, const torch::Device& device, const BenchOptions& opt, StepGraph* graph) {
  StepTimes out;
  std::unique_ptr<TraceProfile> profile;
  // Timed from the first step after warmup to the end of the last, one wait for a GPU at each end: steps queue on
  // it back to back, as in training (the step on the device reads nothing back; losses are read after).
  std::vector<torch::Tensor> losses;
  auto t0 = Clock::now();
  for (int s = 0; s < t.max_steps; ++s) {
    if (s == opt.warmup) {
      if (device.is_cuda()) torch::cuda::synchronize();
      if (!opt.profile_path.empty()) {
        if (fs::path(opt.profile_path).has_parent_path()) make_dirs(fs::path(opt.profile_path).parent_path().string());
        profile = std::make_unique<TraceProfile>(opt.profile_path, device.is_cuda());
      }
      t0 = Clock::now();
    }
    const double lr = lr_at(s, t);
    losses.push_back(graph ? graph->step(sampler, lr).loss
                           : train_step(model, optimizer, sampler, t, lr, device, &split).loss);
  }
  if (device.is_cuda()) torch::cuda::synchronize();
  out.timed_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  profile.reset();  // writes the trace
  for (const auto& loss : losses) out.losses.push_back(loss.item<double>());
  return out;
}

// One snapshot's analysis in ms (the .npy write is ~1 ms more); 0 without a position table.
double snapshot_analysis_ms(GPT& model) {
  const auto a0 = Clock::now();
  if (!model->wpe) return 0;
  analyze_snapshot(model->position_table(), SnapshotInfo{});
  return std::chrono::duration<double, std::milli>(Clock::now() - a0).count();
}

// The config benchmarked: the model's shape, the optimizer's settings, the steps and threads.
nlohmann::json config_json(const Config& cfg, int64_t vocab, int max_steps, int threads) {
  return {{"n_layer", cfg.model.n_layer},
          {"n_head", cfg.model.n_head},
          {"n_embd", cfg.model.n_embd},
          {"block_size", cfg.model.block_size},
          {"batch_size", cfg.train.batch_size},
          {"grad_accum", cfg.train.grad_accum},
          {"vocab_size", vocab},
          {"dtype", cfg.train.dtype},
          {"dropout", cfg.model.dropout},
          {"bias", cfg.model.bias},
          {"lr", cfg.train.lr},
          {"min_lr", cfg.train.min_lr},
          {"warmup_steps", cfg.train.warmup_steps},
          {"weight_decay", cfg.train.weight_decay},
          {"decay_position_table", cfg.train.decay_position_table},
          {"beta1", cfg.train.beta1},
          {"beta2", cfg.train.beta2},
          {"grad_clip", cfg.train.grad_clip},
          {"wpe_init_std", cfg.model.wpe_init_std},
          {"position", cfg.model.position},
          {"max_steps", max_steps},
          {"threads", threads}};
}

}  // namespace

std::vector<int32_t> random_tokens(int64_t vocab, int64_t block_size, uint64_t seed) {
  std::vector<int32_t> tokens(static_cast<size_t>(std::max<int64_t>(200000, 4 * (block_size + 1))));
  std::mt19937_64 rng(seed);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab));
  return tokens;
}

nlohmann::json run_bench(const Config& config, const BenchOptions& options) {
  BenchOptions opt = options;  // a CUDA graph's capture is not timed: it comes after its eager steps, in the warmup
  if (config.train.cuda_graph) opt.warmup = std::max(opt.warmup, StepGraph::kEagerSteps + 1);
  const int threads = apply_threads(config.run.threads);
  const std::string device_name = resolve_device(config.run.device);
  const torch::Device device(device_name == "cuda" ? torch::kCUDA : torch::kCPU);
  if (device.is_cuda()) {  // as training runs
    make_cuda_deterministic();
    set_cuda_tf32(config.train.tf32);
  }
  Config cfg = config;
  cfg.train.dtype = resolve_dtype(cfg.train.dtype, device_name);
  check_cuda_graph(cfg, device, 1);  // before anything is measured
  // The trace's file can be written: known now, not after the steps (its folder is made when the trace starts).
  if (!opt.profile_path.empty()) check_output_file(opt.profile_path, "--profile", /*force=*/true);
  // char: tinyshakespeare's vocabulary (its characters, <unk>, the newline piece) + the 256 byte pieces.
  const int64_t vocab = cfg.data.tokenizer.type == "char" ? 66 + 256 : cfg.data.tokenizer.vocab_size;
  // a model that cannot fit stops here, as train's does, before anything is allocated
  check_training_fits(cfg, vocab, 1, device.is_cuda() ? cuda_memory_room() : memory_room(), device.is_cuda());
  torch::manual_seed(static_cast<uint64_t>(cfg.run.seed));
  const std::vector<int32_t> tokens = random_tokens(vocab, cfg.model.block_size, static_cast<uint64_t>(cfg.run.seed));
  BatchSampler sampler(tokens, cfg.train.batch_size, cfg.model.block_size, static_cast<uint64_t>(cfg.run.seed));

  GPT model(cfg.model, vocab);
  model->to(device);
  auto optimizer = make_optimizer(model, cfg.train);
  model->train();

  TrainConfig t = cfg.train;
  t.max_steps = opt.warmup + opt.steps;
  if (!opt.export_dir.empty()) export_start(opt.export_dir, model, sampler, t.max_steps * t.grad_accum);
  auto split = std::make_unique<BatchSplit>(model, batch_split_ways(cfg, threads, device));
  const KernelTuning tuning = choose_kernel_paths(model, *split, cfg, device, threads, /*log_timings=*/false);
  if (batch_split_of(split->ways()) != split->ways()) split = std::make_unique<BatchSplit>(model, 1);
  std::unique_ptr<StepGraph> graph;
  if (cfg.train.cuda_graph) graph = std::make_unique<StepGraph>(model, *optimizer, t, device, split.get());
  const StepTimes run = run_steps(model, *optimizer, sampler, t, *split, device, opt, graph.get());
  const double analysis_ms = snapshot_analysis_ms(model);

  const int64_t tokens_per_step =
      static_cast<int64_t>(cfg.train.batch_size) * cfg.train.grad_accum * cfg.model.block_size;
  const double ms_per_step = 1000.0 * run.timed_seconds / opt.steps;
  const double tok_s = tokens_per_step / (run.timed_seconds / opt.steps);
  const int64_t n_params = model->num_params(false);
  const double step_flops = flops_per_token(n_params, cfg.model) * tokens_per_step;
  const double achieved = step_flops / (run.timed_seconds / opt.steps) / 1e9;
  // the best of 20 products (1024³: ~2 ms each on a CPU): fewer let one disturbed moment set the peak below the model
  const double peak = matmul_gflops(cfg.train.dtype, peak_matmul_size(device_name), 20, device_name);
  nlohmann::json j = {
      {"config", config_json(cfg, vocab, t.max_steps, threads)},
      {"device", device_name},
      {"gpu", device.is_cuda() ? cuda_device_summary() : ""},
      {"poslab", poslab_version()},
      {"libtorch", TORCH_VERSION},
      {"blas", blas_summary()},
      {"bf16_products", cfg.train.dtype != "bfloat16" || device.is_cuda() ? ""
                        : bf16_products_in_float() ? "float (bf16 operands widened, results rounded)"
                                                   : "onednn"},
      {"threads", threads},
      {"batch_split", split->ways()},
      {"adamw", adamw_on_device(cfg.train, device) ? "fused on the device" : "poslab"},
      {"tf32", device.is_cuda() && cfg.train.tf32},
      {"cuda_graph", graph != nullptr},
      {"kernel_paths", to_json(tuning)},
      {"steps", opt.steps},
      {"warmup", opt.warmup},
      {"tokens_per_step", tokens_per_step},
      {"ms_per_step", ms_per_step},
      {"tokens_per_s", tok_s},
      {"params_without_wpe", n_params},
      {"model_gflop_per_step", step_flops / 1e9},
      {"achieved_gflops", achieved},
      {"matmul_gflops", peak},
      {"mfu", peak > 0 ? achieved / peak : 0.0},
      {"snapshot_analysis_ms", analysis_ms},
      {"snapshot_share_of_step", analysis_ms / ms_per_step},
      {"snapshot_share_at_interval", analysis_ms / (ms_per_step * cfg.snapshot.every)},
      {"losses", run.losses},
  };
  if (!opt.export_dir.empty()) write_file_atomic(opt.export_dir + "/bench.json", json_text(j, 2) + "\n");
  return j;
}

}  // namespace poslab
