// poslab bench: training speed of a config on this machine, against the machine's own matmul throughput.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"

namespace poslab {

struct BenchOptions {
  int steps = 20;  // timed optimizer steps
  int warmup = 3;  // untimed steps first (allocator, oneDNN kernels)
  std::string
      export_dir;  // non-empty: write the initial weights, the batches and the losses for scripts/torch_reference.py
  std::string profile_path;  // non-empty: LibTorch's profiler over the timed steps, a Chrome trace (chrome://tracing,
                             // ui.perfetto.dev); scripts/profile_table.py sums it by op
};

// Trains cfg's model for warmup + steps updates on a seeded random token stream (no corpus needed) and
// reports tokens/s, ms/step, model FLOPs per step (6·N per token plus attention, nanoGPT's estimate),
// the matmul throughput of this machine in the same dtype, the model FLOPs utilisation, and the cost of one
// position-table snapshot with its analysis.
nlohmann::json run_bench(const Config& cfg, const BenchOptions& opt);

// Model FLOPs of one token's forward + backward: 6·N (N = parameters without the position table)
// + 12·n_layer·n_embd·block_size (attention scores and their use).
double flops_per_token(int64_t n_params_without_wpe, const ModelConfig& m);

// GFLOP/s of an (n x n) @ (n x n) matmul in float32 or bfloat16 on `device` ("cpu" | "cuda"), best of `reps`.
// On a GPU the products are timed between synchronisations, so the rate is the GPU's own.
double matmul_gflops(const std::string& dtype, int64_t n = 1024, int reps = 5, const std::string& device = "cpu");

// bench's text: a stream of ids below `vocab` from `seed`, 200,000 tokens, or 4 windows of block_size + 1 when they
// are longer (the speed does not depend on the text; the sampler needs a window to draw).
std::vector<int32_t> random_tokens(int64_t vocab, int64_t block_size, uint64_t seed);

// "MFU 52.3%"; above 100 % (the model faster than the peak measured: a busy machine measures its peak low) the
// figure is no MFU, and the words say so.
std::string mfu_words(double mfu);

}  // namespace poslab
