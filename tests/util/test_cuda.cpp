// A GPU run's determinism (util/cuda.h): cuBLAS is deterministic only with a fixed workspace, so a
// CUBLAS_WORKSPACE_CONFIG that leaves it free stops the run up front, naming the value and what to set.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "util/cuda.h"
#include "util/error.h"

namespace poslab {
namespace {

TEST(CudaDeterminism, ACublasWorkspaceThatIsNotFixedIsNamedBeforeAnythingRuns) {
  EXPECT_EQ(cublas_workspace_problem(nullptr), "");  // unset: poslab sets :4096:8
  EXPECT_EQ(cublas_workspace_problem(":4096:8"), "");
  EXPECT_EQ(cublas_workspace_problem(":16:8"), "");
  EXPECT_NE(cublas_workspace_problem(":0:0").find("CUBLAS_WORKSPACE_CONFIG=:0:0"), std::string::npos);

  const char* env = std::getenv("CUBLAS_WORKSPACE_CONFIG");
  const std::string saved = env ? env : "";
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:2", 1);
  try {
    make_cuda_deterministic();  // throws before it changes anything: safe on the CPU
    ADD_FAILURE() << "no error for CUBLAS_WORKSPACE_CONFIG=:4096:2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUBLAS_WORKSPACE_CONFIG=:4096:2"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find(":4096:8"), std::string::npos) << e.hint();
  }
  if (env)
    setenv("CUBLAS_WORKSPACE_CONFIG", saved.c_str(), 1);
  else
    unsetenv("CUBLAS_WORKSPACE_CONFIG");
}

}  // namespace
}  // namespace poslab
