// The search for the fastest kernel paths (util/kernel_paths.h) given a timer: every combination of the free
// choices timed in two sweeps, then a run-off of the finalists in interleaved rounds. Pure logic: tests give it a
// timer with known timings; tune/pass_timer.h times the model itself.
#pragma once

#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "util/kernel_paths.h"

namespace poslab {

struct PathTiming {
  KernelPaths paths;
  double ms = 0;            // median ms of one forward + backward of the whole batch (infinite: cannot run)
  int rounds = 0;           // > 0: a finalist, ms the median over that many interleaved rounds of the run-off
  double vs_chosen = NAN;   // a finalist's: the median over the rounds of its time over the chosen's in the same
                            // round, less 1 (what decides: the medians of the times can differ from it)
  std::string unavailable;  // why these paths cannot run this model here ("" when they ran)
  double search_ms = NAN;   // its time in the search (the lower of its two sweeps'): the others are set against the
                            // chosen's on it, timed in the same spell (NaN: a cache written before it was kept)
};

struct KernelTuning {
  KernelPaths chosen;
  std::string how;  // "measured", "cached (…)", "forced by POSLAB_KERNELS", "run.kernels = default", …
  std::vector<PathTiming> timings;  // the candidates timed, in the order timed (empty unless measured now or cached)
  std::string key;                  // the cache key: CPU, LibTorch, device, dtype, shape
  std::string sdpa_kernel;  // the kernel scaled_dot_product_attention runs at the run's shape, where the model calls it
};

// Milliseconds per forward + backward with the given paths (injected so that tests can give known timings). A
// timer throws KernelPathUnavailable for paths that cannot run the model here (a GPU's attention kernel that does
// not take its dtype or head size, say), saying why in one line.
using PathTimer = std::function<double(const KernelPaths&)>;
struct KernelPathUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

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
// `runs` says which combinations the run can take (kernel_paths_combine when empty; the bf16 direct step needs
// bf16_products=onednn, say): the others are not timed. A combination whose timing throws KernelPathUnavailable is
// kept among the timings with its reason and an infinite time, and never chosen; `start` must run.
KernelTuning search_kernel_paths(const KernelPaths& start, const PathTimer& time, const std::vector<std::string>& fixed,
                                 double margin = 0.03, int runoff_rounds = 3,
                                 const std::function<bool(const KernelPaths&)>& runs = {});

// The median of repeated timings (NaN when there are none): how the search and the timer sum them up.
double median_ms(std::vector<double> ms);

// The candidates as a table: a column per choice that differs among them (the ones they share on a line above),
// each one's ms per forward + backward in the search and its difference from the chosen's there, or, for a finalist
// of the run-off (marked *), the run-off's difference, explained below them; a candidate that cannot run here says why.
//
//     each with pointwise=fused,batch_split=none,step=direct,sdpa=auto
//     bf16_products attention       ms  vs chosen
//     onednn        fused        46.00     chosen
//     onednn        libtorch     47.50       +2 %*
//     float         fused        92.72     +102 %
//     ms: each path's time in the search, against the chosen's there; * a finalist, run off against the chosen …
// `dtype` the run's train.dtype: a float32 run's shared choices leave out bf16_products, which it does not use.
std::string tuning_text(const KernelTuning& t, const std::string& dtype = "bfloat16");

}  // namespace poslab
