// RAII switch for bf16 autocast of the forward pass (CPU or CUDA), across LibTorch 1.13 and 2.x.
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace poslab {

class AutocastGuard {
 public:
  AutocastGuard(bool enabled, bool cuda) : enabled_(enabled), cuda_(cuda) {
    if (!enabled_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    const auto dev = cuda_ ? at::kCUDA : at::kCPU;
    previous_ = at::autocast::is_autocast_enabled(dev);
    at::autocast::set_autocast_dtype(dev, at::kBFloat16);
    at::autocast::set_autocast_enabled(dev, true);
#else
    if (cuda_) {
      previous_ = at::autocast::is_enabled();
      at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
      at::autocast::set_enabled(true);
    } else {
      previous_ = at::autocast::is_cpu_enabled();
      at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
      at::autocast::set_cpu_enabled(true);
    }
#endif
    at::autocast::increment_nesting();
  }
  ~AutocastGuard() {
    if (!enabled_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(cuda_ ? at::kCUDA : at::kCPU, previous_);
#else
    if (cuda_)
      at::autocast::set_enabled(previous_);
    else
      at::autocast::set_cpu_enabled(previous_);
#endif
  }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool enabled_;
  bool cuda_;
  bool previous_ = false;
};

// Whether bf16 autocast is on for CPU ops in this thread (ops poslab fuses itself then emit bf16 directly).
inline bool cpu_autocast_bf16() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return at::autocast::is_autocast_enabled(at::kCPU) && at::autocast::get_autocast_dtype(at::kCPU) == at::kBFloat16;
#else
  return at::autocast::is_cpu_enabled() && at::autocast::get_autocast_cpu_dtype() == at::kBFloat16;
#endif
}

}  // namespace poslab
