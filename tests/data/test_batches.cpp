#include <gtest/gtest.h>

#include <numeric>

#include "data/batches.h"
#include "test_devices.h"
#include "util/error.h"

namespace poslab {
namespace {

std::vector<int32_t> ramp_tokens(int n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(Batches, ShapesAndTargetsShiftedByOne) {
  const auto tokens = ramp_tokens(1000);
  BatchSampler s(tokens, /*batch_size=*/8, /*block_size=*/16, /*seed=*/1);
  auto [x, y] = s.next();
  EXPECT_EQ(x.sizes(), (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(x.scalar_type(), torch::kInt64);
  EXPECT_TRUE(torch::equal(y, x + 1));  // the ramp makes "next token" = token + 1
  // every window is contiguous and inside the data
  EXPECT_TRUE(torch::equal(x.slice(1, 1), x.slice(1, 0, -1) + 1));
  EXPECT_LE(y.max().item<int64_t>(), 999);
  EXPECT_GE(x.min().item<int64_t>(), 0);
}

TEST(Batches, SmallestDataUsesEveryStart) {
  const auto tokens = ramp_tokens(18);  // block 16: starts 0 and 1 only
  BatchSampler s(tokens, 64, 16, 3);
  auto [x, y] = s.next();
  const auto starts = x.select(1, 0);
  EXPECT_EQ(starts.min().item<int64_t>(), 0);
  EXPECT_EQ(starts.max().item<int64_t>(), 1);
  EXPECT_EQ(y.max().item<int64_t>(), 17);
}

TEST(Batches, SeededAndResumable) {
  const auto tokens = ramp_tokens(5000);
  BatchSampler a(tokens, 4, 8, 42), b(tokens, 4, 8, 42), c(tokens, 4, 8, 43);
  auto xa = a.next().first;
  EXPECT_TRUE(torch::equal(xa, b.next().first));
  EXPECT_FALSE(torch::equal(xa, c.next().first));

  const std::string state = a.state();
  auto next1 = a.next().first;
  auto next2 = a.next().first;
  BatchSampler restored(tokens, 4, 8, 0);
  restored.set_state(state);
  EXPECT_TRUE(torch::equal(restored.next().first, next1));
  EXPECT_TRUE(torch::equal(restored.next().first, next2));
  EXPECT_THROW(restored.set_state("garbage"), Error);
}

class BatchesOnDevice : public test::OnDevice {};

// A batch arrives on the device unchanged; on a GPU it came through pinned memory, asynchronously.
TEST_P(BatchesOnDevice, ToDeviceKeepsTheBatch) {
  const auto tokens = ramp_tokens(1000);
  BatchSampler s(tokens, 8, 16, 1);
  const Batch b = s.next();
  const Batch d = to_device(b, device());
  EXPECT_EQ(d.first.device(), device());
  EXPECT_EQ(d.second.device(), device());
  EXPECT_EQ(d.first.sizes(), b.first.sizes());
  EXPECT_TRUE(torch::equal(d.first.to(torch::kCPU), b.first));
  EXPECT_TRUE(torch::equal(d.second.to(torch::kCPU), b.second));
  if (!is_cuda()) {
    EXPECT_TRUE(d.first.is_same(b.first)) << "on the CPU the batch is not copied";
  }
}

POSLAB_ON_EVERY_DEVICE(BatchesOnDevice);

TEST(Batches, TooFewTokensIsAnError) {
  const auto tokens = ramp_tokens(16);
  EXPECT_THROW(BatchSampler(tokens, 2, 16, 0), c10::Error);
}

}  // namespace
}  // namespace poslab
