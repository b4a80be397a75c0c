// Choosing the kernel paths (util/kernel_paths.h) by measuring them on this machine, on the model's real shapes,
// like cuDNN's benchmark mode: each candidate is timed for a few forward + backward passes and the fastest kept.
// LibTorch's own ops (PyTorch's path) are always among the candidates, so poslab is never slower than them but by
// the measurement's noise. The result is cached per CPU, LibTorch version, device, dtype and shape, so the next
// run starts at once.
#pragma once

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "model/gpt.h"
#include "util/kernel_paths.h"
#include "train/step.h"

namespace poslab {

struct PathTiming {
  KernelPaths paths;
  double ms = 0;  // median ms of one forward + backward of the whole batch
  int rounds = 0;  // > 0: a finalist, ms the median over that many interleaved rounds of the run-off
};

struct KernelTuning {
  KernelPaths chosen;
  std::string how;                  // "measured", "cached (…)", "forced by POSLAB_KERNELS", "run.kernels = default", …
  std::vector<PathTiming> timings;  // the candidates timed, in the order timed (empty unless measured now or cached)
  std::string key;                  // the cache key: CPU, LibTorch, device, dtype, shape
};

// Milliseconds per forward + backward with the given paths (injected so that tests can give known timings).
using PathTimer = std::function<double(const KernelPaths&)>;

// Every combination of the choices' candidates is timed in two sweeps, `start` (poslab's defaults) first in the
// first and last in the second (where within 1.5 times the first sweep's best), and keeps the lower of its times;
// the fastest replaces start only when faster by more than `margin` (a fraction: noise is not a reason to leave
// the defaults). LibTorch's paths (libtorch_kernel_paths) are one of the combinations, so PyTorch's path is always
// timed. The choices named in `fixed` keep start's value, in LibTorch's paths too (bf16_products in float32, where
// it does nothing; batch_split where the batch is not split or run.batch_split fixes it): 16 combinations at most.
// Then a run-off: the choice, LibTorch's paths and the next fastest within 25 % of the choice (4 in all) are timed
// again in `runoff_rounds` interleaved rounds (each round times each once, in a rotated order), and each is judged
// by the median over rounds of its time relative to the choice's in the same round: a drift of the machine's speed
// during the search (on shared machines, tens of percent within seconds) touches all finalists alike, where it
// can reverse a comparison of two candidates timed one after the other. A finalist replaces the choice when faster
// by more than `margin`; the finalists' ms become their medians over the rounds.
KernelTuning search_kernel_paths(const KernelPaths& start, const PathTimer& time, const std::vector<std::string>& fixed,
                                 double margin = 0.03, int runoff_rounds = 3);

// The timer on the model itself: `warmup` then `reps` forward + backward passes of a fixed batch of cfg's shape
// (train.batch_size × block_size, cut by `split`, or whole for batch_split=none), under cfg's dtype; the median.
// Gradients are cleared after each pass and the CPU generator's state is restored, so training goes on as if
// untimed.
PathTimer model_pass_timer(GPT& model, BatchSplit& split, const Config& cfg, const torch::Device& device,
                           int warmup = 1, int reps = 2);

// The key of the cache: "CPU | LibTorch version | poslab build | device dtype | n_layer n_head n_embd block vocab batch
// threads" (the build: the running executable's size and time, so that a rebuilt poslab measures again).
std::string kernel_tuning_key(const Config& cfg, int64_t vocab, int threads, const std::string& device,
                              const std::string& dtype);

// The paths for a run: POSLAB_KERNELS when set, else run.kernels. "default", "libtorch" and NAME=VALUE specs are
// used as they are; "auto" takes the cache's entry for the key, or measures and stores it; "measure" always
// measures. On a GPU nothing is measured (the choices are the CPU's). A damaged cache is named in a warning and
// measured over, never an error. Sets kernel_paths() and logs what was chosen, how, and the timings. The caller
// makes its batch split whole when batch_split=none was chosen (batch_split_of).
KernelTuning choose_kernel_paths(GPT& model, BatchSplit& split, const Config& cfg, const torch::Device& device,
                                 int threads);

// The ways to cut a batch into under the current kernel paths: `ways`, or 1 for batch_split=none.
int batch_split_of(int ways);

// The cache file: cache_dir/kernel_paths.json, {key: {paths, timings: [{paths, ms}], date}}.
std::string kernel_cache_path(const Config& cfg);
// The cache's entry for `key`, or nothing: absent, or damaged (then a warning names the file, and the caller
// measures again and rewrites it).
std::optional<KernelTuning> read_kernel_cache(const std::string& path, const std::string& key);

nlohmann::json to_json(const KernelTuning& t);
// "attention=fused,… 12.3 ms | attention=libtorch … 14.0 ms (+14 %) …": one line per candidate.
std::string tuning_text(const KernelTuning& t);

}  // namespace poslab
