#include "tune/pass_timer.h"

#include <ATen/CPUGeneratorImpl.h>

#include <torch/cuda.h>

#include <cctype>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "util/cuda.h"
#include "util/kernel_paths.h"
#include "util/sdpa_backend.h"

namespace poslab {
namespace {

// The CPU generator's state, restored on leaving the scope (a timed pass with dropout draws from it).
class KeepCpuRng {
 public:
  KeepCpuRng() {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    state_ = gen.get_state();
  }
  ~KeepCpuRng() {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(state_);
  }
  KeepCpuRng(const KeepCpuRng&) = delete;
  KeepCpuRng& operator=(const KeepCpuRng&) = delete;

 private:
  torch::Tensor state_;
};

// The same for the GPU's generator (dropout on the GPU draws from it).
class KeepCudaRng {
 public:
  explicit KeepCudaRng(bool cuda) : state_(cuda ? cuda_rng_state() : torch::Tensor()) {}
  ~KeepCudaRng() { set_cuda_rng_state(state_, "the kernel-path timer's saved generator state"); }
  KeepCudaRng(const KeepCudaRng&) = delete;
  KeepCudaRng& operator=(const KeepCudaRng&) = delete;

 private:
  torch::Tensor state_;
};

}  // namespace

PathTimer model_pass_timer(GPT& model, BatchSplit& split, const Config& cfg, const torch::Device& device, int warmup,
                           int reps) {
  const int64_t B = cfg.train.batch_size, T = cfg.model.block_size, V = model->wte->weight.size(0);
  // a fixed batch of token ids spread over the vocabulary, no generator drawn from
  const torch::Tensor ids = (torch::arange(B * (T + 1), torch::kInt64) * 7919) % V;
  const torch::Tensor x = ids.slice(0, 0, B * T).view({B, T}), y = ids.slice(0, 1, B * T + 1).view({B, T});
  const bool bf16 = cfg.train.dtype == "bfloat16";
  auto whole = std::make_shared<std::unique_ptr<BatchSplit>>();  // batch_split=none, made when first timed
  return [&model, &split, whole, x, y, bf16, device, warmup, reps](const KernelPaths& paths) {
    KernelPathsGuard guard(paths);
    KeepCpuRng keep_rng;
    KeepCudaRng keep_cuda_rng(device.is_cuda());
    if (paths.batch_split == "none" && split.ways() > 1 && !*whole) *whole = std::make_unique<BatchSplit>(model, 1);
    BatchSplit& s = paths.batch_split == "none" && split.ways() > 1 ? **whole : split;
    IntraOpThreads one(s.ways() > 1 ? 1 : 0);  // as train_step_on keeps it for the whole step
    std::vector<double> ms;
    for (int r = 0; r < warmup + reps; ++r) {
      TorchWarnings warned;  // a kernel that declines the call says why in a warning, then the call fails
      double dt = 0;
      try {
        if (device.is_cuda()) torch::cuda::synchronize();  // a GPU's queue empty before and after the timed pass
        const auto t0 = std::chrono::steady_clock::now();
        s.forward_backward(x, y, 1.0, bf16, device);
        s.reduce_grads();
        if (device.is_cuda()) torch::cuda::synchronize();
        dt = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      } catch (const c10::Error& e) {
        model->zero_grad();
        std::string why = std::string(e.what_without_backtrace()) + "\n" + warned.text();  // on one line
        while (!why.empty() && std::isspace(static_cast<unsigned char>(why.back()))) why.pop_back();
        for (size_t at = why.find('\n'); at != std::string::npos; at = why.find('\n', at)) why.replace(at, 1, "; ");
        throw KernelPathUnavailable(why);
      }
      model->zero_grad();
      if (r >= warmup) ms.push_back(dt);
    }
    return median_ms(ms);
  };
}

}  // namespace poslab
