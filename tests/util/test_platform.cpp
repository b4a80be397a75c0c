// What poslab sets up at start-up: OpenBLAS's variables (answered through getenv) and the allocator.
#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <strings.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "test_util.h"
#include "util/platform.h"

namespace poslab {
namespace {

// Where the environment leaves OPENBLAS_CORETYPE and OPENBLAS_NUM_THREADS unset, getenv answers with poslab's values
// (what OpenBLAS's initialiser reads before main); a value set wins, POSLAB_NO_REEXEC=1 leaves them unanswered, and
// every other name is the environment's.
TEST(Platform, GetenvAnswersTheUnsetOpenBlasVariablesWithPoslabsValues) {
  test::ScopedEnv core("OPENBLAS_CORETYPE", nullptr), threads("OPENBLAS_NUM_THREADS", nullptr),
      no("POSLAB_NO_REEXEC", nullptr);
  EXPECT_EQ(environment_value("OPENBLAS_CORETYPE"), nullptr);
  const std::string preferred = preferred_openblas_coretype();
  if (preferred.empty()) {
    EXPECT_EQ(std::getenv("OPENBLAS_CORETYPE"), nullptr);
  } else {
    EXPECT_STREQ(std::getenv("OPENBLAS_CORETYPE"), preferred.c_str());
  }
  EXPECT_STREQ(std::getenv("OPENBLAS_NUM_THREADS"), "1");
  EXPECT_EQ(std::getenv("OPENBLAS_VERBOSE"), nullptr);  // only those two
  {
    test::ScopedEnv set("OPENBLAS_NUM_THREADS", "3");
    EXPECT_STREQ(std::getenv("OPENBLAS_NUM_THREADS"), "3");
  }
  {
    test::ScopedEnv off("POSLAB_NO_REEXEC", "1");
    EXPECT_EQ(std::getenv("OPENBLAS_CORETYPE"), nullptr);
    EXPECT_EQ(std::getenv("OPENBLAS_NUM_THREADS"), nullptr);
  }
  test::ScopedEnv other("POSLAB_TEST_VARIABLE", "a=b");
  EXPECT_STREQ(std::getenv("POSLAB_TEST_VARIABLE"), "a=b");
  EXPECT_EQ(std::getenv("POSLAB_TEST_VARIABL"), nullptr);
  EXPECT_EQ(std::getenv("POSLAB_TEST_VARIABLE_"), nullptr);
}

// This process's OpenBLAS started with the core type getenv gave it, poslab's or the one the environment names (that
// the program starts once for it, not twice, the cli test counts with strace).
TEST(Platform, OpenBlasStartedWithTheCoreTypeGetenvGave) {
  using CoreFn = char* (*)();
  auto corename = reinterpret_cast<CoreFn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (corename == nullptr) GTEST_SKIP() << "this LibTorch's BLAS is not OpenBLAS (" << blas_summary() << ")";
  const char* wanted = std::getenv("OPENBLAS_CORETYPE");
  if (wanted == nullptr) GTEST_SKIP() << "no core type asked for (POSLAB_NO_REEXEC=1, or a CPU without AVX2)";
  EXPECT_EQ(strcasecmp(corename(), wanted), 0) << corename() << " against " << wanted;
}

// run.threads: auto (0) takes every core (LibTorch's own default was 1 thread on some AMD Zen 5 machines), shared
// among the processes of this machine; more threads than cores run, with a warning naming what auto would take
// (1000 threads on 2 cores ran like a hang).
TEST(Platform, ThreadsAutoTakeEveryCoreAndMoreThanTheCoresGiveAWarning) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int before = at::get_num_threads();
  auto log = std::make_unique<test::CapturedLog>();
  EXPECT_EQ(apply_threads(0), cores);
  EXPECT_EQ(at::get_num_threads(), cores);
  EXPECT_EQ(apply_threads(0, 2 * cores, false), 1);  // more processes than cores: one thread each
  EXPECT_EQ(apply_threads(cores), cores);
  const std::string quiet = log->str();
  // More processes than cores: the processes are named, not the threads (one each already).
  EXPECT_EQ(apply_threads(1, 2 * cores), 1);
  const std::string crowded = log->str().substr(quiet.size());
  EXPECT_NE(crowded.find(std::to_string(2 * cores) + " processes on this machine's " + std::to_string(cores) +
                         " cores: they take turns on them, and every step waits for the slowest; run " +
                         std::to_string(cores) + " processes or fewer here (--nproc)"),
            std::string::npos)
      << crowded;
  EXPECT_EQ(crowded.find("run.threads"), std::string::npos) << crowded;
  EXPECT_EQ(apply_threads(cores + 1), cores + 1);
  const std::string over = log->str().substr(quiet.size() + crowded.size());
  EXPECT_EQ(apply_threads(cores, 2), cores);
  const std::string shared = log->str().substr(quiet.size() + crowded.size() + over.size());
  log.reset();
  apply_threads(before);
  EXPECT_EQ(quiet, "") << "a warning where the threads fit the cores";
  EXPECT_NE(over.find("run.threads " + std::to_string(cores + 1) + " is more than this machine's " +
                      std::to_string(cores) + " cores"),
            std::string::npos)
      << over;
  EXPECT_NE(over.find("run.threads auto takes " + std::to_string(cores)), std::string::npos) << over;
  EXPECT_NE(shared.find("run.threads " + std::to_string(cores) + " in each of 2 processes is more than"),
            std::string::npos)
      << shared;
  EXPECT_NE(shared.find("auto takes " + std::to_string(std::max(1, cores / 2))), std::string::npos) << shared;
}

// glibc serves a block above its mmap threshold (128 KiB by default) with its own mapping, returned to the
// kernel when freed; after keep_freed_memory() a 16 MiB block (two slices' logits) comes from the heap.
TEST(Platform, KeepFreedMemoryServesLargeBlocksFromTheHeap) {
  keep_freed_memory();
  const size_t mapped_before = mallinfo2().hblks;
  void* block = std::malloc(16 << 20);
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, 16 << 20);
  EXPECT_EQ(mallinfo2().hblks, mapped_before);  // no new mapping
  std::free(block);
}

// train.dtype auto: bf16 on CUDA and where the CPU multiplies bf16 in hardware (read here from /proc/cpuinfo
// on its own), float32 elsewhere; explicit values stay as they are.
TEST(Platform, AutoDtypeIsBf16OnlyWhereItIsNative) {
  std::ifstream in("/proc/cpuinfo");
  const std::string cpuinfo((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const bool native =
      cpuinfo.find(" avx512_bf16") != std::string::npos || cpuinfo.find(" amx_bf16") != std::string::npos;
  EXPECT_EQ(cpu_has_native_bf16(), native);
  EXPECT_EQ(resolve_dtype("auto", "cpu"), native ? "bfloat16" : "float32");
  EXPECT_EQ(resolve_dtype("auto", "cuda"), "bfloat16");
  EXPECT_EQ(resolve_dtype("float32", "cuda"), "float32");
  EXPECT_EQ(resolve_dtype("bfloat16", "cpu"), "bfloat16");
}

}  // namespace
}  // namespace poslab
