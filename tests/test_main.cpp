// GoogleTest main: takes the fast BLAS path like poslab itself, keeps the logs quiet, and fixes the kernel paths
// (util/kernel_paths.h) unless the environment already names them: the tests compare runs bit for bit, and a
// measured choice could differ between two runs of one test. (Autotune's tests measure on purpose.)
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "util/platform.h"

int main(int argc, char** argv) {
  poslab::ensure_fast_blas(argc, argv);
  setenv("POSLAB_KERNELS", "default", /*overwrite=*/0);
  spdlog::set_level(spdlog::level::warn);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
