// GoogleTest main: takes the fast BLAS path like poslab itself, keeps the logs quiet.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "util/platform.h"

int main(int argc, char** argv) {
  poslab::ensure_fast_blas(argc, argv);
  spdlog::set_level(spdlog::level::warn);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
