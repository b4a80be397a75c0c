// Where poslab has more than one implementation of a piece of the model on the CPU, which one runs. Each choice
// has poslab's own kernel and LibTorch's ops (what PyTorch runs) as candidates, so that the all-LibTorch setting is
// PyTorch's own path; tune/autotune.h times them on the model's real shapes and picks the fastest, and a config
// key or POSLAB_KERNELS forces them (tests, A/B runs). Every setting computes the same model: the whole-model
// reference tests pass on each.
#pragma once

#include <string>
#include <vector>

namespace poslab {

struct KernelPaths {
  // bf16 matrix products under autocast: "onednn" (LibTorch's bf16 kernels) or "float" (operands widened to float,
  // multiplied by the float BLAS, the result rounded to bf16: bf16_products.h).
  std::string bf16_products = "onednn";
  // causal self-attention: "fused" (poslab's one-op kernel, ops/attention.h) or "libtorch"
  // (scaled_dot_product_attention on LibTorch 2.x, bmm + masked softmax + bmm on 1.x).
  std::string attention = "fused";
  // LayerNorm, GELU and the tied head with its cross-entropy: "fused" (poslab's kernels) or "libtorch".
  std::string pointwise = "fused";
  // a batch cut into slices trained in parallel threads, one intra-op thread each ("threads": run.batch_split's
  // ways, model/batch_split.h), or whole with every intra-op thread on each op ("none": what PyTorch does).
  std::string batch_split = "threads";
  // the training step's forward and backward: "direct" (the whole model written out on buffers allocated once,
  // model/direct_pass.h: CPU runs without dropout, float32, or bf16 with bf16_products=onednn; poslab's fused
  // kernels throughout, so it needs attention=fused and pointwise=fused) or "autograd" (the modules' forward,
  // LibTorch's autograd backward).
  std::string step = "direct";
  // which of LibTorch's scaled_dot_product_attention kernels may run where the model calls it (on a GPU always,
  // on the CPU with attention=libtorch; LibTorch 2.x): "auto" (LibTorch picks per call, PyTorch's default), or
  // "flash", "efficient", "cudnn", "math" alone (util/sdpa_backend.h). Measured on a GPU; "auto" on the CPU unless
  // forced.
  std::string sdpa = "auto";

  bool operator==(const KernelPaths& o) const {
    return bf16_products == o.bf16_products && attention == o.attention && pointwise == o.pointwise &&
           batch_split == o.batch_split && step == o.step && sdpa == o.sdpa;
  }
  bool operator!=(const KernelPaths& o) const { return !(*this == o); }
};

// One choice and its candidates, the first being poslab's rule-of-thumb default.
struct KernelChoice {
  const char* name;
  std::vector<std::string> values;
  std::string KernelPaths::*field;
};
const std::vector<KernelChoice>& kernel_choices();

// The paths the model runs now (process-wide; set before training or benchmarking starts). Setting them also sets
// LibTorch's flags for the sdpa choice (set_sdpa_backend).
const KernelPaths& kernel_paths();
void set_kernel_paths(const KernelPaths& p);

// poslab's defaults without measuring: bf16 products in float where the CPU has no bf16 instructions (AVX2), else
// oneDNN; poslab's fused kernels elsewhere; the batch split in threads.
KernelPaths default_kernel_paths(bool cpu_has_bf16);
// LibTorch's ops everywhere: what PyTorch runs.
KernelPaths libtorch_kernel_paths();

// Whether the paths can run together: step=direct runs poslab's kernels, so attention and pointwise are "fused".
bool kernel_paths_combine(const KernelPaths& p);

// "bf16_products=onednn,attention=fused,pointwise=fused,batch_split=threads,step=direct".
std::string to_string(const KernelPaths& p);
// Whether a run in `dtype` (a config's train.dtype) uses the choice: a float32 run makes no bf16 product.
bool kernel_choice_in_use(const KernelChoice& c, const std::string& dtype);
// The choices that apply to a run in `dtype`, as the log says them: to_string without those it does not use.
std::string to_string_in_use(const KernelPaths& p, const std::string& dtype);
// A spec: "auto" | "measure" | "default" | "libtorch" | "NAME=VALUE[,NAME=VALUE…]" (the named choices set on top of
// `base`). A spec that sets attention or pointwise to libtorch without naming the step gets step=autograd (the
// direct step cannot run LibTorch's ops). `what` names the spec's source in errors ("run.kernels",
// "POSLAB_KERNELS"); throws poslab::Error naming the unknown name or value and listing the candidates, or a
// combination that cannot run.
KernelPaths parse_kernel_paths(const std::string& spec, const KernelPaths& base, const std::string& what);

// POSLAB_KERNELS, where it is set, parsed as a run would when it starts: a bad value is an error before anything is
// written.
void check_kernels_env();
// Whether a spec asks for a measurement ("auto": use the cached one if there is one, "measure": always measure).
bool kernel_spec_measures(const std::string& spec);

// Sets the paths for a scope and restores the previous ones (tests).
class KernelPathsGuard {
 public:
  explicit KernelPathsGuard(const KernelPaths& p) : saved_(kernel_paths()) { set_kernel_paths(p); }
  ~KernelPathsGuard() { set_kernel_paths(saved_); }
  KernelPathsGuard(const KernelPathsGuard&) = delete;
  KernelPathsGuard& operator=(const KernelPathsGuard&) = delete;

 private:
  KernelPaths saved_;
};

}  // namespace poslab
