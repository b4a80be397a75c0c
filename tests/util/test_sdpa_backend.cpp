// Which of scaled_dot_product_attention's kernels may run (util/sdpa_backend.h): each name allows its kernel alone,
// as LibTorch's own choice shows; "auto" gives LibTorch's pick back; the names a device or a LibTorch cannot run are
// said, with why; and LibTorch's warnings are kept, not printed, while asked to be.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "util/kernel_paths.h"
#include "util/sdpa_backend.h"

namespace poslab {
namespace {

// q, k, v as the model makes them: (B, nh, T, hs) views of (B, T, nh, hs), needing gradients.
torch::Tensor heads(torch::Dtype dtype) {
  return torch::randn({2, 16, 4, 8}, torch::TensorOptions().dtype(dtype).requires_grad(true)).transpose(1, 2);
}

TEST(SdpaBackend, EachNameAllowsItsKernelAloneAndAutoGivesLibTorchsPickBack) {
  const torch::Tensor q = heads(torch::kFloat32);
  if (TORCH_VERSION_MAJOR < 2) {  // nothing to pick among: every name but auto is refused, saying why
    for (const char* name : {"flash", "efficient", "cudnn", "math"})
      EXPECT_NE(sdpa_backend_unavailable(name, false).find("has no scaled_dot_product_attention"), std::string::npos);
    EXPECT_EQ(sdpa_backend_for(q, q, q), "none");
    return;
  }
  KernelPaths p = kernel_paths();
  const std::string libtorch_pick = sdpa_backend_for(q, q, q);  // LibTorch's flags: the tests never change them
  EXPECT_NE(libtorch_pick, "none");
  {
    p.sdpa = "math";
    KernelPathsGuard math(p);
    EXPECT_EQ(sdpa_backend_for(q, q, q), "math");
    p.sdpa = "flash";  // LibTorch's CPU kernel of FlashAttention's algorithm
    KernelPathsGuard flash(p);
    EXPECT_EQ(sdpa_backend_for(q, q, q), "flash");
    p.sdpa = "efficient";  // a GPU's kernel alone: nothing runs on the CPU
    KernelPathsGuard efficient(p);
    EXPECT_EQ(sdpa_backend_for(q, q, q), "none");
    p.sdpa = "auto";
    KernelPathsGuard automatic(p);
    EXPECT_EQ(sdpa_backend_for(q, q, q), libtorch_pick);
    p.sdpa = "math";
    set_kernel_paths(p);  // the guards put back the flags of the paths before them
  }
  EXPECT_EQ(sdpa_backend_for(q, q, q), libtorch_pick);
}

TEST(SdpaBackend, TheKernelsADeviceOrALibTorchCannotRunAreNamedWithWhy) {
  EXPECT_EQ(sdpa_backend_unavailable("auto", false), "");
  EXPECT_EQ(sdpa_backend_unavailable("auto", true), "");
  if (TORCH_VERSION_MAJOR < 2) {
    EXPECT_NE(sdpa_backend_unavailable("math", true).find("LibTorch " TORCH_VERSION), std::string::npos);
    return;
  }
  EXPECT_EQ(sdpa_backend_unavailable("flash", false), "");
  EXPECT_EQ(sdpa_backend_unavailable("math", false), "");
  EXPECT_EQ(sdpa_backend_unavailable("efficient", false), "the efficient kernel runs on a GPU only");
  EXPECT_EQ(sdpa_backend_unavailable("efficient", true), "");
  const bool cudnn = TORCH_VERSION_MAJOR > 2 || TORCH_VERSION_MINOR >= 4;
  EXPECT_EQ(sdpa_backend_unavailable("cudnn", true).empty(), cudnn) << sdpa_backend_unavailable("cudnn", true);
  // a GPU run's strict deterministic mode: LibTorch refuses cuDNN's attention there, and poslab says so up front
  auto& ctx = at::globalContext();
  const bool was = ctx.deterministicAlgorithms(), was_warn_only = ctx.deterministicAlgorithmsWarnOnly();
  ctx.setDeterministicAlgorithms(true, /*warn_only=*/false);
  const std::string strict = sdpa_backend_unavailable("cudnn", true);
  ctx.setDeterministicAlgorithms(true, /*warn_only=*/true);
  const std::string warn_only = sdpa_backend_unavailable("cudnn", true);
  ctx.setDeterministicAlgorithms(was, was_warn_only);
  if (cudnn) {
    EXPECT_NE(strict.find("no deterministic backward"), std::string::npos) << strict;
    EXPECT_EQ(warn_only, "");
  }
  EXPECT_EQ(sdpa_backend_unavailable("flash", true), "");
}

TEST(SdpaBackend, WarningsAreKeptWhileAskedAndPrintedAgainAfter) {
  if (TORCH_VERSION_MAJOR < 2) {
    TorchWarnings kept;
    EXPECT_EQ(kept.text(), "");  // LibTorch 1.x's handler has another form: its warnings are printed as before
    return;
  }
  testing::internal::CaptureStderr();
  {
    TorchWarnings kept;
    TORCH_WARN("first reason");
    TORCH_WARN("second reason");
    EXPECT_EQ(kept.text(), "first reason\nsecond reason");
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  testing::internal::CaptureStderr();
  TORCH_WARN("printed again");
  EXPECT_NE(testing::internal::GetCapturedStderr().find("printed again"), std::string::npos);
}

}  // namespace
}  // namespace poslab
