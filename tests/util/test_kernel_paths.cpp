// The choice of kernel paths (util/kernel_paths.h): defaults by CPU, specs parsed with errors that name the bad
// name or value, and the guard that tests use to force a path.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_util.h"
#include "util/error.h"
#include "util/kernel_paths.h"

namespace poslab {
namespace {

using test::error_of;

TEST(KernelPaths, DefaultsFollowTheCpuAndLibtorchIsPyTorchsPath) {
  EXPECT_EQ(default_kernel_paths(false).bf16_products, "float");  // AVX2: oneDNN would emulate bf16
  EXPECT_EQ(default_kernel_paths(true).bf16_products, "onednn");
  EXPECT_EQ(default_kernel_paths(true).attention, "fused");
  EXPECT_EQ(default_kernel_paths(true).pointwise, "fused");
  EXPECT_EQ(default_kernel_paths(true).batch_split, "threads");
  EXPECT_EQ(default_kernel_paths(false).step, "direct");
  const KernelPaths t = libtorch_kernel_paths();
  EXPECT_EQ(to_string(t),
            "bf16_products=onednn,attention=libtorch,pointwise=libtorch,batch_split=none,step=autograd,sdpa=auto");
  for (const KernelChoice& c : kernel_choices()) {
    EXPECT_GE(c.values.size(), 2u) << c.name;
    // LibTorch's own path is a candidate of every choice
    EXPECT_NE(std::find(c.values.begin(), c.values.end(), t.*c.field), c.values.end()) << c.name;
  }
}

TEST(KernelPaths, SpecsSetNamedChoicesOnTheBaseAndNameWhatIsWrong) {
  const KernelPaths base = default_kernel_paths(true);
  EXPECT_EQ(parse_kernel_paths("default", base, "k"), base);
  EXPECT_EQ(parse_kernel_paths("auto", base, "k"), base);
  EXPECT_EQ(parse_kernel_paths("libtorch", base, "k"), libtorch_kernel_paths());
  const KernelPaths p = parse_kernel_paths("attention=libtorch, bf16_products=float", base, "k");
  // LibTorch's attention: the step is autograd's (the direct step runs poslab's kernels only)
  EXPECT_EQ(to_string(p),
            "bf16_products=float,attention=libtorch,pointwise=fused,batch_split=threads,step=autograd,sdpa=auto");
  EXPECT_EQ(parse_kernel_paths(to_string(p), base, "k"), p);  // what the log prints parses back
  EXPECT_TRUE(kernel_spec_measures("auto"));
  EXPECT_TRUE(kernel_spec_measures("measure"));
  EXPECT_FALSE(kernel_spec_measures("default"));

  std::string msg = error_of([&] { parse_kernel_paths("attention=flash", base, "run.kernels"); });
  EXPECT_NE(msg.find("run.kernels = attention=flash: attention has no candidate \"flash\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("attention is one of fused, libtorch"), std::string::npos) << msg;
  msg = error_of([&] { parse_kernel_paths("softmax=fused", base, "POSLAB_KERNELS"); });
  EXPECT_NE(msg.find("POSLAB_KERNELS = softmax=fused: \"softmax=fused\" is not NAME=VALUE with NAME one of "
                     "bf16_products, attention, pointwise, batch_split, step"),
            std::string::npos)
      << msg;
  msg = error_of([&] { parse_kernel_paths("step=direct,pointwise=libtorch", base, "run.kernels"); });
  EXPECT_NE(msg.find("run.kernels = step=direct,pointwise=libtorch: step=direct runs poslab's fused kernels, not "
                     "attention=fused pointwise=libtorch"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("use step=autograd"), std::string::npos) << msg;
  EXPECT_TRUE(kernel_paths_combine(base));
  EXPECT_TRUE(kernel_paths_combine(parse_kernel_paths("step=autograd,attention=libtorch", base, "k")));
  KernelPaths direct_with_torch_ops = base;
  direct_with_torch_ops.attention = "libtorch";
  EXPECT_FALSE(kernel_paths_combine(direct_with_torch_ops));
  EXPECT_EQ(parse_kernel_paths("step=autograd", base, "k").step, "autograd");
  msg = error_of([&] { parse_kernel_paths("fast", base, "run.kernels"); });
  EXPECT_NE(msg.find("use auto, measure, default, libtorch"), std::string::npos) << msg;
}

// The log names the choices a run makes: a float32 run makes no bf16 product.
TEST(KernelPaths, AFloat32RunsPathsLeaveOutTheBf16Products) {
  const KernelPaths p = default_kernel_paths(true);
  EXPECT_EQ(to_string_in_use(p, "bfloat16"), to_string(p));
  const std::string f32 = to_string_in_use(p, "float32");
  EXPECT_EQ(f32.find("bf16_products"), std::string::npos) << f32;
  EXPECT_EQ("bf16_products=" + p.bf16_products + "," + f32, to_string(p));
}

TEST(KernelPaths, TheGuardRestoresThePreviousPaths) {
  const KernelPaths before = kernel_paths();
  {
    KernelPathsGuard g(libtorch_kernel_paths());
    EXPECT_EQ(kernel_paths(), libtorch_kernel_paths());
  }
  EXPECT_EQ(kernel_paths(), before);
}

}  // namespace
}  // namespace poslab
