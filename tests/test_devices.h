// Device-parametrised tests: each case runs on the CPU, and on CUDA where this LibTorch has CUDA and the machine a
// GPU. Elsewhere the CUDA cases stay in the test list (".../cuda") and are skipped with the reason, never dropped.
//
//   class MyTest : public test::OnDevice {};
//   TEST_P(MyTest, Works) { auto x = torch::ones({2}, device()); ... }
//   POSLAB_ON_EVERY_DEVICE(MyTest);   // Devices/MyTest.Works/cpu, Devices/MyTest.Works/cuda
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "util/cuda.h"

namespace poslab::test {

class OnDevice : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (is_cuda() && !torch::cuda::is_available())
      GTEST_SKIP() << "CUDA case, not run here: " << cuda_unavailable_reason();
  }
  bool is_cuda() const { return GetParam() == "cuda"; }
  const std::string& device_name() const { return GetParam(); }
  // cuda:0, as tensors report it (a Device without an index compares unequal to it).
  torch::Device device() const { return is_cuda() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU); }
};

}  // namespace poslab::test

#define POSLAB_ON_EVERY_DEVICE(Suite)                                        \
  INSTANTIATE_TEST_SUITE_P(Devices, Suite, ::testing::Values("cpu", "cuda"), \
                           [](const ::testing::TestParamInfo<std::string>& info) { return info.param; })
