// The allocator setting poslab applies at start-up.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>

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

}  // namespace
}  // namespace poslab
