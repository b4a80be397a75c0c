// The allocator setting poslab applies at start-up.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "util/platform.h"

namespace poslab {
namespace {

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
