// The whole model held to PyTorch, in llm.c's manner: tests/fixtures/gpt_reference.safetensors holds a tiny GPT's
// initial weights, one batch, and what PyTorch computed from them (logits, loss, every gradient, ten AdamW updates),
// in float32 and under bf16 autocast. Made by `/usr/bin/python3 scripts/make_reference_fixture.py` (the command is
// also in the file's __metadata__); these tests need no Python.
#include <gtest/gtest.h>

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.h"
#include "formats/safetensors.h"
#include "model/direct_pass.h"
#include "model/gpt.h"
#include "ops/autocast.h"
#include "source_paths.h"
#include "test_devices.h"
#include "train/optim.h"
#include "train/schedule.h"
#include "train/step.h"
#include "tune/autotune.h"
#include "util/fs.h"
#include "util/kernel_paths.h"
#include "util/platform.h"
#include "util/sdpa_backend.h"

namespace poslab {
namespace {

// The fixture's model and training settings (scripts/make_reference_fixture.py: CONFIG, TRAIN).
constexpr int64_t kVocab = 64, kSteps = 10;
const std::vector<std::string> kSettings = {"model.n_layer=2",
                                            "model.n_head=4",
                                            "model.n_embd=32",
                                            "model.block_size=16",
                                            "model.bias=true",
                                            "model.dropout=0",
                                            "model.position=learned",
                                            "train.batch_size=4",
                                            "train.lr=1e-2",
                                            "train.min_lr=1e-3",
                                            "train.warmup_steps=2",
                                            "train.max_steps=10",
                                            "train.weight_decay=0.1",
                                            "train.beta1=0.9",
                                            "train.beta2=0.99",
                                            "train.grad_clip=1.0",
                                            "train.decay_position_table=true"};

// |got - want| <= of_max * max|want| everywhere: relative to the tensor's scale (a tensor's small elements carry
// the rounding of its large ones through the sums). Float32 differs from PyTorch only by the order of sums (fused
// kernels, the chunked head, the batch split); bf16 also by where values are rounded to bf16 (poslab's fused LayerNorm,
// GELU and head round at other points than autocast does), so its tolerances are a few of bf16's ulps (2^-8 = 0.4 %).
struct Tolerance {
  double of_max;
};
// Measured (max |delta| / max |want|): fp32 logits 1.8e-7, gradients <= 4.3e-7, losses 1.7e-7, gradient norms
// 6.3e-7, final table 9.4e-7; bf16 logits 3.0e-3, gradients <= 2.8e-2, losses 7.1e-4, gradient norms 2.1e-2,
// final table 4.3e-2. The bf16 table drifts most: AdamW moves a parameter whose gradient is near zero by about lr
// whichever way rounding tips it, and ten steps at lr 1e-2 add that up.
constexpr Tolerance kFp32Logits{2e-6}, kFp32Grad{5e-6}, kFp32Loss{5e-6}, kFp32Norm{5e-6}, kFp32Table{1e-5};
constexpr Tolerance kBf16Logits{1e-2}, kBf16Grad{6e-2}, kBf16Loss{2e-3}, kBf16Norm{5e-2}, kBf16Table{1e-1};

// The worst element against a tolerance: where it is and by how much.
struct Mismatch {
  bool ok = true;
  double max_abs = 0;  // max |got - want| over all elements
  double scale = 0;    // max |want|
  std::string where;   // index of the worst element relative to the tolerance, e.g. "[1, 7, 30]"
  double got = 0, want = 0;
  std::string describe(const std::string& name, const Tolerance& tol) const {
    return fmt::format(
        "{}: max |delta| {:.3g} = {:.2g} x max |want| ({:.3g}); worst at {}: got {:.7g}, PyTorch {:.7g} "
        "(tolerance {:.1g} x max |want|)",
        name, max_abs, scale > 0 ? max_abs / scale : 0.0, scale, where, got, want, tol.of_max);
  }
};

Mismatch compare(const torch::Tensor& got_in, const torch::Tensor& want_in, const Tolerance& tol) {
  const torch::Tensor got = got_in.detach().to(torch::kCPU, torch::kFloat64).contiguous();
  const torch::Tensor want = want_in.to(torch::kFloat64).contiguous();
  EXPECT_EQ(got.sizes(), want.sizes());
  Mismatch m;
  if (got.sizes() != want.sizes()) {
    m.ok = false;
    m.where = "shape " + c10::str(got.sizes()) + " vs " + c10::str(want.sizes());
    return m;
  }
  const torch::Tensor diff = (got - want).abs();
  m.scale = want.abs().max().item<double>();
  const torch::Tensor excess = diff - tol.of_max * m.scale;  // > 0 where out of tolerance
  const int64_t worst = excess.reshape(-1).argmax().item<int64_t>();
  m.max_abs = diff.max().item<double>();
  m.ok = excess.reshape(-1)[worst].item<double>() <= 0;
  std::vector<int64_t> index(static_cast<size_t>(got.dim()));
  int64_t rest = worst;
  for (int64_t d = got.dim() - 1; d >= 0; --d) {
    index[static_cast<size_t>(d)] = rest % got.size(d);
    rest /= got.size(d);
  }
  m.where = c10::str(c10::IntArrayRef(index));
  m.got = got.reshape(-1)[worst].item<double>();
  m.want = want.reshape(-1)[worst].item<double>();
  return m;
}

#define EXPECT_CLOSE(got, want, tol, name)              \
  do {                                                  \
    const Mismatch mm_ = compare((got), (want), (tol)); \
    EXPECT_TRUE(mm_.ok) << mm_.describe((name), (tol)); \
  } while (0)

// The fixture's tensors by name, read once.
class Fixture {
 public:
  Fixture()
      : path_(poslab::test::source_dir() + "/tests/fixtures/gpt_reference.safetensors"), bytes_(read_file(path_)) {}
  torch::Tensor operator[](const std::string& name) const {
    const SafetensorsEntry e = find_safetensors_entry(bytes_, name, path_);
    if (e.dtype != "I64" && e.dtype != "F32")
      throw std::runtime_error(path_ + ": " + name + " is " + e.dtype + ", the fixture holds F32 and I64 only");
    auto t = torch::empty(e.shape, e.dtype == "I64" ? torch::kInt64 : torch::kFloat32);
    std::memcpy(t.data_ptr(), bytes_.data() + e.offset, e.bytes);
    return t;
  }
  torch::Tensor x() const { return (*this)["tokens"].slice(1, 0, -1).contiguous(); }  // (B, T)
  torch::Tensor y() const { return (*this)["tokens"].slice(1, 1).contiguous(); }      // (B, T)

 private:
  std::string path_;
  std::string bytes_;
};

Config reference_config(const std::string& dtype) {
  std::vector<Override> settings(kSettings.begin(), kSettings.end());
  settings.push_back("train.dtype=" + dtype);
  return load_config("", settings);
}

// poslab's GPT with the fixture's initial weights, on `device`.
GPT reference_model(const Fixture& f, const Config& cfg, const torch::Device& device = torch::kCPU) {
  GPT model(cfg.model, kVocab);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->named_parameters()) p.value().copy_(f["param." + p.key()]);
  }
  model->to(device);
  model->train();
  return model;
}

// On the CPU through poslab's fused kernels; on a GPU through LibTorch's ops and CUDA autocast.
void check_forward_backward(const torch::Device& device, const std::string& dtype, const Tolerance& logits_tol,
                            const Tolerance& loss_tol, const Tolerance& grad_tol) {
  const Fixture f;
  const Config cfg = reference_config(dtype);
  const std::string prefix = dtype == "float32" ? "fp32." : "bf16.";
  GPT model = reference_model(f, cfg, device);
  const torch::Tensor x = f.x().to(device), y = f.y().to(device);
  torch::Tensor logits;
  {
    AutocastGuard autocast(dtype == "bfloat16", device.is_cuda());
    logits = model->forward(x);  // (B, T, V)
  }
  EXPECT_CLOSE(logits, f[prefix + "logits"], logits_tol, prefix + "logits");
  // The loss as training computes it: the fused head + cross-entropy, whose gradient reaches every parameter.
  torch::Tensor loss;
  {
    AutocastGuard autocast(dtype == "bfloat16", device.is_cuda());
    loss = model->forward_loss(x, y);
  }
  EXPECT_CLOSE(loss.reshape(1), f[prefix + "loss"], loss_tol, prefix + "loss");
  loss.backward();
  int checked = 0;
  for (const auto& p : model->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key() << " has no gradient";
    EXPECT_CLOSE(p.value().grad(), f[prefix + "grad." + p.key()], grad_tol, prefix + "grad." + p.key());
    ++checked;
  }
  EXPECT_EQ(checked, 4 + 12 * 2);  // wte, wpe, ln_f (2) + 12 tensors in each of 2 blocks
  const bool bf16 = dtype == "bfloat16";
  if (!device.is_cpu() || kernel_paths().step != "direct" || !DirectPass::unsupported(model, bf16, device).empty())
    return;
  // The whole-model pass that the direct step runs (model/direct_pass.h): the same loss and gradients.
  GPT direct_model = reference_model(f, cfg);
  DirectPass pass(direct_model);
  const torch::Tensor direct_loss = pass.forward_backward(f.x(), f.y(), 1.0, bf16);
  EXPECT_CLOSE(direct_loss.reshape(1), f[prefix + "loss"], loss_tol, "direct pass: " + prefix + "loss");
  for (const auto& p : direct_model->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << "direct pass: " << p.key() << " has no gradient";
    EXPECT_CLOSE(p.value().grad(), f[prefix + "grad." + p.key()], grad_tol,
                 "direct pass: " + prefix + "grad." + p.key());
  }
}

// kSteps AdamW updates on the same batch through poslab's own train step (on the CPU: fused clip + AdamW, with
// `ways` batch slices in parallel threads; on a GPU: LibTorch's AdamW), the batch moved as training moves it.
void check_training(const torch::Device& device, const std::string& dtype, int ways, const Tolerance& loss_tol,
                    const Tolerance& norm_tol, const Tolerance& table_tol) {
  const Fixture f;
  const Config cfg = reference_config(dtype);
  const std::string prefix = dtype == "float32" ? "fp32." : "bf16.";
  GPT model = reference_model(f, cfg, device);
  auto opt = make_optimizer(model, cfg.train);
  BatchSplit split(model, ways);
  const Batch batch = to_device({f.x(), f.y()}, device);
  std::vector<double> losses, norms;
  for (int step = 0; step < kSteps; ++step) {
    const StepResult r = train_step_on(model, *opt, {batch}, cfg.train, lr_at(step, cfg.train), device, &split);
    losses.push_back(r.loss.item<double>());
    norms.push_back(r.grad_norm);
  }
  const std::string what = prefix + "(batch split " + std::to_string(ways) + ") ";
  EXPECT_CLOSE(torch::tensor(losses), f[prefix + "losses"], loss_tol, what + "losses");
  EXPECT_CLOSE(torch::tensor(norms), f[prefix + "grad_norms"], norm_tol, what + "grad_norms");
  EXPECT_CLOSE(model->wpe->weight, f[prefix + "final.wpe.weight"], table_tol, what + "final.wpe.weight");
}

class Reference : public test::OnDevice {
 protected:
  std::vector<int> ways() const { return is_cuda() ? std::vector<int>{1} : std::vector<int>{1, 2}; }  // split: CPU only

  // Every kernel path setting the model can run on the CPU (util/kernel_paths.h), forced whatever the CPU: the
  // defaults, each other candidate of each choice alone, and LibTorch's paths throughout. (float32: the bf16
  // products choice does nothing; the batch split is each check's own ways.) A GPU runs LibTorch's ops whatever the
  // setting: there the defaults, and each of scaled_dot_product_attention's kernels (sdpa) that takes the model's
  // attention in this dtype; on the CPU those kernels run under LibTorch's attention.
  std::vector<KernelPaths> paths(const std::string& dtype) const {
    const KernelPaths start = default_kernel_paths(cpu_has_native_bf16());
    std::vector<KernelPaths> out = {start};
    KernelPaths sdpa = start;
    if (!is_cuda()) sdpa.attention = "libtorch", sdpa.step = "autograd";
    for (const char* v : {"flash", "efficient", "cudnn", "math"}) {
      sdpa.sdpa = v;
      if (sdpa_backend_unavailable(v, is_cuda()).empty() && sdpa_takes(sdpa, dtype)) out.push_back(sdpa);
    }
    if (is_cuda()) return out;
    for (const KernelChoice& c : kernel_choices()) {
      const std::string name = c.name;
      if (dtype != "bfloat16" && name == "bf16_products") continue;
      if (name == "batch_split" || name == "sdpa") continue;  // each check runs each split; sdpa: above
      for (const std::string& v : c.values)
        if (v != start.*c.field) {
          KernelPaths p = start;
          p.*c.field = v;
          if (!kernel_paths_combine(p)) p.step = "autograd";  // LibTorch's ops run under autograd only
          out.push_back(p);
        }
    }
    if (std::find(out.begin(), out.end(), libtorch_kernel_paths()) == out.end()) out.push_back(libtorch_kernel_paths());
    return out;
  }

  // Whether scaled_dot_product_attention has a kernel under p's sdpa for the reference model's q, k, v.
  bool sdpa_takes(const KernelPaths& p, const std::string& dtype) const {
    KernelPathsGuard guard(p);
    return sdpa_kernel_at(reference_config(dtype), device()) != "none";
  }
};

TEST_P(Reference, Fp32LogitsLossAndEveryGradientMatchPyTorchOnEveryKernelPath) {
  for (const KernelPaths& p : paths("float32")) {
    SCOPED_TRACE("kernel paths " + to_string(p));
    KernelPathsGuard guard(p);
    check_forward_backward(device(), "float32", kFp32Logits, kFp32Loss, kFp32Grad);
  }
}

TEST_P(Reference, Bf16LogitsLossAndEveryGradientMatchPyTorchOnEveryKernelPath) {
  for (const KernelPaths& p : paths("bfloat16")) {
    SCOPED_TRACE("kernel paths " + to_string(p));
    KernelPathsGuard guard(p);
    check_forward_backward(device(), "bfloat16", kBf16Logits, kBf16Loss, kBf16Grad);
  }
}

TEST_P(Reference, Fp32TenAdamWStepsMatchPyTorchOnEveryKernelPath) {
  for (const KernelPaths& p : paths("float32")) {
    SCOPED_TRACE("kernel paths " + to_string(p));
    KernelPathsGuard guard(p);
    for (int ways : ways()) check_training(device(), "float32", ways, kFp32Loss, kFp32Norm, kFp32Table);
  }
}

TEST_P(Reference, Bf16TenAdamWStepsMatchPyTorchOnEveryKernelPath) {
  for (const KernelPaths& p : paths("bfloat16")) {
    SCOPED_TRACE("kernel paths " + to_string(p));
    KernelPathsGuard guard(p);
    for (int ways : ways()) check_training(device(), "bfloat16", ways, kBf16Loss, kBf16Norm, kBf16Table);
  }
}

POSLAB_ON_EVERY_DEVICE(Reference);

// The tolerances are tight enough to see a wrong weight: one weight of the fixture moved by 0.01 (half of its
// init's standard deviation) shows in the logits and in the gradients.
TEST(ReferenceTolerance, APerturbedWeightIsCaught) {
  const Fixture f;
  const Config cfg = reference_config("float32");
  GPT model = reference_model(f, cfg);
  {
    torch::NoGradGuard no_grad;
    model->named_parameters()["h.1.mlp.c_fc.weight"][5][7] += 0.01;
  }
  const Mismatch logits = compare(model->forward(f.x()), f["fp32.logits"], kFp32Logits);
  EXPECT_FALSE(logits.ok) << logits.describe("logits", kFp32Logits);
  model->forward_loss(f.x(), f.y()).backward();
  const Mismatch grad = compare(model->wte->weight.grad(), f["fp32.grad.wte.weight"], kFp32Grad);
  EXPECT_FALSE(grad.ok) << grad.describe("wte grad", kFp32Grad);
}

}  // namespace
}  // namespace poslab
