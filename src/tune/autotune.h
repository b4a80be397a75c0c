// Choosing the kernel paths (util/kernel_paths.h) by measuring them on this machine, on the model's real shapes,
// like cuDNN's benchmark mode: each candidate is timed for a few forward + backward passes and the fastest kept.
// LibTorch's own ops (PyTorch's path) are always among the candidates, so poslab is never slower than them but by
// the measurement's noise. The result is cached per CPU, LibTorch version, device, dtype and shape, so the next
// run starts at once. The parts: the search (autotune_search.h), the timer on the model (pass_timer.h), the cache
// (kernel_cache.h); here, the policy that puts them together.
#pragma once

#include <torch/torch.h>

#include <string>

#include "config/config.h"
#include "model/batch_split.h"
#include "model/gpt.h"
#include "tune/autotune_search.h"
#include "tune/kernel_cache.h"
#include "tune/pass_timer.h"
#include "util/kernel_paths.h"

namespace poslab {

// The key of the cache: "CPU | LibTorch version | poslab build | device dtype | n_layer n_head n_embd block vocab batch
// threads" (the build: the running executable's size and time, so that a rebuilt poslab measures again); on a GPU
// the GPU in place of the CPU, and TF32 when on.
std::string kernel_tuning_key(const Config& cfg, int64_t vocab, int threads, const std::string& device,
                              const std::string& dtype);

// The paths for a run: POSLAB_KERNELS when set, else run.kernels. "default", "libtorch" and NAME=VALUE specs are
// used as they are; "auto" takes the cache's entry for the key, or measures and stores it; "measure" always
// measures. On a GPU the one choice measured is the attention kernel (sdpa; the others are the CPU's), each of
// LibTorch's kernels that takes the model's shape and dtype timed against LibTorch's own pick. A forced choice
// that cannot run here (step=direct on a GPU, sdpa=efficient on the CPU) is a warning, and the run takes what can.
// A damaged cache is named in a warning and measured over, never an error. Sets kernel_paths() and logs what was
// chosen, how, and the timings (unless `log_timings` is false: bench prints them in its report). The caller makes
// its batch split whole when batch_split=none was chosen (batch_split_of).
KernelTuning choose_kernel_paths(GPT& model, BatchSplit& split, const Config& cfg, const torch::Device& device,
                                 int threads, bool log_timings = true);

// The kernel scaled_dot_product_attention runs for cfg's model on `device` under the flags set now (kernel_paths()'s
// sdpa): q, k, v as the model makes them ((B, nh, T, hs) views of (B, T, nh, hs)), in the dtype autocast gives them,
// needing gradients; "none" when no allowed kernel takes them (util/sdpa_backend.h).
std::string sdpa_kernel_at(const Config& cfg, const torch::Device& device);

// p, its sdpa choice kept where this device and LibTorch can run it for cfg's attention (util/sdpa_backend.h: the
// kernel exists here, and takes the model's q, k, v at cfg's shape and dtype), else "auto", with a warning naming
// `what` (the spec or the record that asked for it). A forced choice, a resumed run's record and rank 0's record
// all pass through it: the run never stops at its first forward for want of an attention kernel.
KernelPaths with_runnable_sdpa(KernelPaths p, const Config& cfg, const torch::Device& device, const std::string& what);

// The ways to cut a batch into under the current kernel paths: `ways`, or 1 for batch_split=none.
int batch_split_of(int ways);

}  // namespace poslab
