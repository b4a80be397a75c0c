// A GPU run's determinism (util/cuda.h): LibTorch's deterministic mode, strictly; cuBLAS is deterministic only with
// a fixed workspace, so a CUBLAS_WORKSPACE_CONFIG that leaves it free stops the run up front, naming the value and
// what to set.
#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/version.h>

#include <cstdlib>
#include <string>

#include "test_util.h"
#include "util/cuda.h"
#include "util/error.h"

namespace poslab {
namespace {

TEST(CudaDeterminism, ACublasWorkspaceThatIsNotFixedIsNamedBeforeAnythingRuns) {
  EXPECT_EQ(cublas_workspace_problem(nullptr), "");  // unset: poslab sets :4096:8
  EXPECT_EQ(cublas_workspace_problem(":4096:8"), "");
  EXPECT_EQ(cublas_workspace_problem(":16:8"), "");
  EXPECT_NE(cublas_workspace_problem(":0:0").find("CUBLAS_WORKSPACE_CONFIG=:0:0"), std::string::npos);

  test::ScopedEnv free_workspace("CUBLAS_WORKSPACE_CONFIG", ":4096:2");
  try {
    make_cuda_deterministic();  // throws before it changes anything: safe on the CPU
    ADD_FAILURE() << "no error for CUBLAS_WORKSPACE_CONFIG=:4096:2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUBLAS_WORKSPACE_CONFIG=:4096:2"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find(":4096:8"), std::string::npos) << e.hint();
  }
}

// LibTorch's deterministic mode, strictly: in warn-only mode the flash and memory-efficient attention kernels keep
// their non-deterministic backward (they only warn), and a resumed GPU run would not repeat the uninterrupted one.
TEST(CudaDeterminism, AGpuRunsDeterministicModeIsStrict) {
  test::ScopedEnv unset("CUBLAS_WORKSPACE_CONFIG", nullptr);
  auto& ctx = at::globalContext();
  const bool was = ctx.deterministicAlgorithms(), was_warn_only = ctx.deterministicAlgorithmsWarnOnly();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  const bool was_fill = ctx.deterministicFillUninitializedMemory();
#endif
  make_cuda_deterministic();
  const bool strict = ctx.deterministicAlgorithms() && !ctx.deterministicAlgorithmsWarnOnly();
  const char* workspace = std::getenv("CUBLAS_WORKSPACE_CONFIG");
  const std::string set = workspace ? workspace : "";
  ctx.setDeterministicAlgorithms(was, was_warn_only);  // the CPU tests after this one run as before
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  ctx.setDeterministicFillUninitializedMemory(was_fill);
#endif
  EXPECT_TRUE(strict);
  EXPECT_EQ(set, ":4096:8");
}

}  // namespace
}  // namespace poslab
