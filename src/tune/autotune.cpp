#include "tune/autotune.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "model/direct_pass.h"
#include "util/cuda.h"
#include "util/platform.h"
#include "util/sdpa_backend.h"

namespace poslab {
namespace {

namespace fs = std::filesystem;

// This program's build: the size and modification time of the running executable. Timings measured by another
// build of poslab (whose kernels may run at another speed) are not reused.
std::string this_build() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "build unknown";
  const auto size = fs::file_size(exe, ec);
  const auto time = fs::last_write_time(exe, ec);
  if (ec) return "build unknown";
  return fmt::format("build {:x}-{:x}", size, static_cast<uint64_t>(time.time_since_epoch().count()));
}

// Whether the model's attention calls scaled_dot_product_attention under `p` (model/gpt.h): LibTorch 2.x, on a GPU,
// or on the CPU with LibTorch's attention or with dropout.
bool runs_sdpa(const KernelPaths& p, const Config& cfg, const torch::Device& device) {
  return TORCH_VERSION_MAJOR >= 2 && (device.is_cuda() || p.attention == "libtorch" || cfg.model.dropout > 0);
}

}  // namespace

std::string sdpa_kernel_at(const Config& cfg, const torch::Device& device) {
  const ModelConfig& m = cfg.model;
  const auto dtype = cfg.train.dtype == "bfloat16" ? torch::kBFloat16 : torch::kFloat32;
  const torch::Tensor q = torch::empty({cfg.train.batch_size, m.block_size, m.n_head, m.n_embd / m.n_head},
                                       torch::TensorOptions().dtype(dtype).device(device).requires_grad(true))
                              .transpose(1, 2);  // (B, nh, T, hs)
  return sdpa_backend_for(q, q, q);
}

KernelPaths with_runnable_sdpa(KernelPaths p, const Config& cfg, const torch::Device& device, const std::string& what) {
  if (p.sdpa == "auto") return p;
  std::string why = sdpa_backend_unavailable(p.sdpa, device.is_cuda());
  if (why.empty() && runs_sdpa(p, cfg, device)) {
    KernelPathsGuard asked(p);
    if (sdpa_kernel_at(cfg, device) == "none")
      why = fmt::format("it takes no attention of this run's ({}, head size {})", cfg.train.dtype,
                        cfg.model.n_embd / cfg.model.n_head);
  }
  if (!why.empty()) {
    spdlog::warn("kernel paths: {} asks for sdpa={}, but {}: this run lets LibTorch pick (sdpa=auto)", what, p.sdpa,
                 why);
    p.sdpa = "auto";
  }
  return p;
}

int batch_split_of(int ways) { return kernel_paths().batch_split == "none" ? 1 : ways; }

std::string kernel_tuning_key(const Config& cfg, int64_t vocab, int threads, const std::string& device,
                              const std::string& dtype) {
  const ModelConfig& m = cfg.model;
  static const std::string build = this_build();
  return fmt::format(
      "{} | LibTorch {} | poslab {} | {} {} | layers {} heads {} embd {} block {} vocab {} batch {} threads {}{}{}{}",
      device == "cuda" ? cuda_device_summary() : cpu_description(), TORCH_VERSION, build, device, dtype, m.n_layer,
      m.n_head, m.n_embd, m.block_size, vocab, cfg.train.batch_size, threads, m.bias ? "" : " no-bias",
      m.dropout > 0 ? fmt::format(" dropout {}", m.dropout) : "", device == "cuda" && cfg.train.tf32 ? " tf32" : "");
}

KernelTuning choose_kernel_paths(GPT& model, BatchSplit& split, const Config& cfg, const torch::Device& device,
                                 int threads, bool log_timings) {
  KernelPaths defaults = default_kernel_paths(cpu_has_native_bf16());
  const bool bf16 = cfg.train.dtype == "bfloat16";
  // Why the direct step cannot run with these paths (bf16 needs bf16_products=onednn), or "".
  const auto no_direct = [&](const KernelPaths& p) {
    return DirectPass::unsupported(model, bf16, device, p.bf16_products);
  };
  if (!no_direct(defaults).empty()) defaults.step = "autograd";
  const char* env = std::getenv("POSLAB_KERNELS");
  const bool from_env = env != nullptr && *env != '\0';
  const std::string spec = from_env ? env : cfg.run.kernels;
  const std::string what = from_env ? "POSLAB_KERNELS" : "run.kernels";
  KernelTuning t;
  t.chosen = parse_kernel_paths(spec, defaults, what);  // checks the spec whatever it asks for
  if (t.chosen.step == "direct" && !no_direct(t.chosen).empty()) {
    spdlog::warn("kernel paths: {} = {} asks for step=direct, but {}: this run steps by autograd", what, spec,
                 no_direct(t.chosen));
    t.chosen.step = "autograd";
  }
  t.chosen = with_runnable_sdpa(t.chosen, cfg, device, what + " = " + spec);
  const std::string where = device.is_cuda() ? "cuda" : "cpu";
  t.key = kernel_tuning_key(cfg, model->wte->weight.size(0), threads, where, cfg.train.dtype);
  if (!kernel_spec_measures(spec)) {
    t.how = fmt::format("{} = {}", what, spec);
  } else if (device.is_cuda() && TORCH_VERSION_MAJOR < 2) {
    t.how = "nothing to measure on a GPU with LibTorch " TORCH_VERSION " (the choices are the CPU's)";
  } else {
    const std::string cache = kernel_cache_path(cfg);
    std::optional<KernelTuning> cached = spec == "auto" ? read_kernel_cache(cache, t.key) : std::nullopt;
    if (cached) {
      t = std::move(*cached);
    } else {
      spdlog::info("kernel paths: measuring which run fastest for this model here ({}; {}=default skips it)",
                   spec == "auto" ? "once for its shape, threads and machine: kept in " + cache
                                  : what + " = " + spec + ": every time, kept in " + cache,
                   what);
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<std::string> fixed;
      if (device.is_cuda()) {  // on a GPU the model runs LibTorch's ops: the attention kernel is the one choice
        for (const KernelChoice& c : kernel_choices())
          if (std::string(c.name) != "sdpa") fixed.push_back(c.name);
      } else {
        if (cfg.train.dtype != "bfloat16") fixed.push_back("bf16_products");
        if (split.ways() == 1 || cfg.run.batch_split != 0) fixed.push_back("batch_split");
        KernelPaths onednn = defaults;
        onednn.bf16_products = "onednn";
        if (!no_direct(bf16 ? onednn : defaults).empty()) fixed.push_back("step");
        fixed.push_back("sdpa");  // LibTorch's pick on the CPU
      }
      t = search_kernel_paths(defaults, model_pass_timer(model, split, cfg, device), fixed, 0.03, 3,
                              [&](const KernelPaths& p) {
                                return (p.step != "direct" || no_direct(p).empty()) &&
                                       sdpa_backend_unavailable(p.sdpa, device.is_cuda()).empty();
                              });
      t.key = kernel_tuning_key(cfg, model->wte->weight.size(0), threads, where, cfg.train.dtype);
      t.how = fmt::format("measured in {:.1f} s",
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      write_kernel_cache(cache, t);
    }
  }
  set_kernel_paths(t.chosen);
  if (runs_sdpa(t.chosen, cfg, device)) t.sdpa_kernel = sdpa_kernel_at(cfg, device);
  spdlog::info("kernel paths: {} ({}){}", to_string_in_use(t.chosen, cfg.train.dtype), t.how,
               t.sdpa_kernel.empty()
                   ? ""
                   : fmt::format(" | attention: scaled_dot_product_attention's {} kernel", t.sdpa_kernel));
  if (log_timings && !t.timings.empty())
    spdlog::info("kernel paths, ms per forward + backward:\n{}", tuning_text(t, cfg.train.dtype));
  return t;
}

}  // namespace poslab
