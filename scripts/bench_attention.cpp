// Causal self-attention, forward + backward of one layer in bf16, three ways side by side in one process:
// poslab's fused kernel with bf16 pair products (ops/bf16_gemm.h), the same kernel with its products widened to
// float (bf16_products=float), and LibTorch's ops (bmm, masked softmax, bmm: what PyTorch runs on 1.13). The
// three are timed in turns, ROUNDS times; prints each one's median and minimum and the ratios of the medians.
// Built and run by scripts/bench_attention.sh.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ops/attention.h"
#include "ops/bf16_gemm.h"
#include "util/kernel_paths.h"
#include "util/platform.h"

using namespace poslab;

torch::Tensor libtorch_attention(const torch::Tensor& qkv, int64_t nh) {
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, hs = C / nh;
  const auto parts = qkv.split(C, 2);
  const auto heads = [&](const torch::Tensor& t) {
    return t.view({B, T, nh, hs}).transpose(1, 2).reshape({B * nh, T, hs});
  };
  const auto q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);
  const auto bias = torch::full({T, T}, -INFINITY).triu(1).to(qkv.scalar_type());
  const auto att = torch::softmax(torch::baddbmm(bias, q, k.transpose(1, 2), 1.0, 1.0 / std::sqrt(double(hs))), -1);
  return torch::bmm(att, v).view({B, nh, T, hs}).transpose(1, 2).contiguous().view({B, T, C});
}

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s BATCH BLOCK N_EMBD N_HEAD ROUNDS\n", argv[0]);
    return 2;
  }
  const int64_t B = std::atoll(argv[1]), T = std::atoll(argv[2]), C = std::atoll(argv[3]), nh = std::atoll(argv[4]);
  const int rounds = std::atoi(argv[5]);
  ensure_fast_blas(argc, argv);  // the BLAS, malloc and threads set up as poslab's own commands set them
  keep_freed_memory();
  apply_threads(2);
  torch::manual_seed(0);
  const auto qkv0 = torch::randn({B, T, 3 * C}).to(torch::kBFloat16);
  const auto up = torch::randn({B, T, C}).to(torch::kBFloat16);
  const char* names[3] = {"fused, bf16 pair products", "fused, products widened to float", "LibTorch's ops"};
  std::vector<double> ms[3];
  for (int r = 0; r < rounds + 1; ++r)  // round 0 warms up
    for (int m = 0; m < 3; ++m) {
      KernelPaths p = kernel_paths();
      p.bf16_products = m == 1 ? "float" : "onednn";
      KernelPathsGuard guard(p);
      const auto qkv = qkv0.clone().requires_grad_(true);
      const auto t0 = std::chrono::steady_clock::now();
      const auto y = m == 2 ? libtorch_attention(qkv, nh) : causal_attention(qkv, nh);
      y.backward(up);
      if (r > 0)
        ms[m].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  std::printf(
      "causal attention, bf16, batch %lld, block %lld, n_embd %lld, %lld heads: forward + backward of one layer, "
      "%d rounds, 2 threads, pair products %s\n",
      (long long)B, (long long)T, (long long)C, (long long)nh, rounds,
      cpu_has_bf16_dot() ? "by VDPBF16PS (AVX512-BF16)" : "emulated (no AVX512-BF16)");
  double med[3];
  for (int m = 0; m < 3; ++m) {
    std::sort(ms[m].begin(), ms[m].end());
    med[m] = ms[m][ms[m].size() / 2];
    std::printf("  %-34s median %8.2f ms  min %8.2f ms\n", names[m], med[m], ms[m][0]);
  }
  std::printf("  pair products against LibTorch's ops: %.2fx as fast; against widened products: %.2fx\n",
              med[2] / med[0], med[1] / med[0]);
}
