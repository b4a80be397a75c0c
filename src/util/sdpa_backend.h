// Which of LibTorch's scaled_dot_product_attention kernels may run: the kernel path `sdpa` (util/kernel_paths.h).
// LibTorch 2.x has several for one call: FlashAttention-2 ("flash", a GPU's bf16/fp16, and a CPU kernel of its own),
// xFormers' memory-efficient attention ("efficient", GPU), cuDNN's ("cudnn", GPU, LibTorch 2.4 and newer) and the
// plain one written in ATen ops ("math", anywhere). "auto" leaves the pick to LibTorch's own rules for each call
// (PyTorch's default); any other name allows that kernel alone, and a call it cannot take is an error.
#pragma once

#include <string>

namespace at {
class Tensor;
}  // namespace at

namespace poslab {

// Allows the kernels `name` says, process-wide (LibTorch's global flags, what Python's sdpa_kernel sets).
// set_kernel_paths calls it; "auto" restores the flags LibTorch started with. (This header includes no LibTorch
// header: util/kernel_paths.cpp compiles without them.)
void set_sdpa_backend(const std::string& name);

// Why `name` cannot run on a GPU (`cuda`) or the CPU with this LibTorch, "" when it may: efficient and cudnn run on
// a GPU only, cudnn needs LibTorch 2.4 and is refused under LibTorch's strict deterministic mode (a GPU run's,
// util/cuda.h), and LibTorch 1.x has no scaled_dot_product_attention. Whether a kernel takes a given shape and
// dtype, sdpa_backend_for says.
std::string sdpa_backend_unavailable(const std::string& name, bool cuda);

// The kernel LibTorch picks now for causal attention on q, k, v (B, nh, T, hs) without dropout, under the flags
// set now: "flash", "efficient", "cudnn", "math", or "none" when none of the allowed ones takes them.
std::string sdpa_backend_for(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// While alive, LibTorch's warnings on this thread are kept here instead of printed: the reasons a kernel gives for
// declining a call (LibTorch 2.x; with 1.x they are printed as before).
class TorchWarnings {
 public:
  TorchWarnings();
  ~TorchWarnings();
  TorchWarnings(const TorchWarnings&) = delete;
  TorchWarnings& operator=(const TorchWarnings&) = delete;
  // The warnings so far, each on a line of its own.
  std::string text() const;

 private:
  struct Handler;
  Handler* handler_;
};

}  // namespace poslab
