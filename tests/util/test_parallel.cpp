// poslab::parallel_for splits over LibTorch's intra-op threads (at::parallel_for written in this file would not:
// compiled without -fopenmp it runs every range on the calling thread), and the fused ops it drives give the same
// bits on one thread and on two.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ops/attention.h"
#include "ops/causal_softmax.h"
#include "ops/cross_entropy.h"
#include "ops/gelu.h"
#include "ops/layer_norm.h"
#include "ops/residual.h"
#include "util/parallel.h"

namespace poslab {
namespace {

// Sets LibTorch's intra-op thread count for one test and puts the previous one back.
class IntraOpThreads {
 public:
  explicit IntraOpThreads(int n) : previous_(at::get_num_threads()) { at::set_num_threads(n); }
  ~IntraOpThreads() { at::set_num_threads(previous_); }

 private:
  int previous_;
};

struct Chunk {
  int64_t begin, end;
  std::thread::id thread;
};

std::vector<Chunk> chunks_of(int64_t begin, int64_t end, int64_t grain) {
  std::mutex m;
  std::vector<Chunk> chunks;
  parallel_for(begin, end, grain, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(m);
    chunks.push_back({b, e, std::this_thread::get_id()});
  });
  std::sort(chunks.begin(), chunks.end(), [](const Chunk& a, const Chunk& b) { return a.begin < b.begin; });
  return chunks;
}

TEST(Parallel, SplitsALongRangeOverTheIntraOpThreadsAndCoversItOnce) {
  IntraOpThreads two(2);
  ASSERT_EQ(parallel_threads(), 2);
  const auto chunks = chunks_of(0, 1000, 1);
  ASSERT_EQ(chunks.size(), 2u) << "one chunk: the loop ran on one thread (compiled without OpenMP?)";
  EXPECT_EQ(chunks[0].begin, 0);
  EXPECT_EQ(chunks[0].end, chunks[1].begin);
  EXPECT_EQ(chunks[1].end, 1000);
  EXPECT_NE(chunks[0].thread, chunks[1].thread);
}

TEST(Parallel, RunsOnTheCallingThreadWhenShortOneThreadOrNested) {
  IntraOpThreads two(2);
  const auto here = std::this_thread::get_id();
  const auto short_range = chunks_of(0, 100, 100);  // no longer than the grain
  ASSERT_EQ(short_range.size(), 1u);
  EXPECT_EQ(short_range[0].thread, here);
  EXPECT_EQ(chunks_of(5, 5, 1).size(), 0u);  // empty: f never runs

  std::vector<size_t> inner_chunks(2, 0);
  parallel_for(0, 2, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) inner_chunks[i] = chunks_of(0, 1000, 1).size();  // inside a parallel region
  });
  EXPECT_EQ(inner_chunks, (std::vector<size_t>{1, 1}));

  IntraOpThreads one(1);
  const auto single = chunks_of(0, 1000, 1);
  ASSERT_EQ(single.size(), 1u);
  EXPECT_EQ(single[0].thread, here);
}

TEST(Parallel, RethrowsWhatAChunkThrows) {
  IntraOpThreads two(2);
  EXPECT_THROW(parallel_for(0, 1000, 1,
                            [](int64_t b, int64_t) {
                              if (b > 0) throw std::runtime_error("second chunk failed");
                            }),
               std::runtime_error);
}

// Every fused op's value and gradients on one thread and on two, bit for bit.
std::vector<torch::Tensor> fused_ops_once() {
  torch::manual_seed(3);
  const int64_t B = 4, T = 64, C = 128, V = 97;
  const auto x = torch::randn({B * T, C}).requires_grad_(true);
  const auto w = (1 + 0.1 * torch::randn({C})).requires_grad_(true), b = (0.1 * torch::randn({C})).requires_grad_(true);
  const auto h = fused_layer_norm(x, w, b, 1e-5, true).view({B, T, C});      // bf16
  const auto qkv = torch::cat({h, h.flip(2), h * 0.5}, 2);                   // (B, T, 3C)
  const auto r = residual_add(x.view({B, T, C}), causal_attention(qkv, 4));  // float + bf16
  const auto g = poslab::gelu(r.to(torch::kBFloat16));
  const auto p = causal_softmax(g.view({B, T, 2, T}).select(2, 0).contiguous(), 0.3);  // (B, T, T) scores
  const auto head = torch::randn({V, C});
  const auto logits = torch::mm(g.view({B * T, C}).to(torch::kFloat32), head.t()) + p.sum().to(torch::kFloat32);
  const auto targets = torch::randint(V, {B * T}, torch::kInt64);
  const auto loss = fused_cross_entropy(logits, targets);
  loss.backward();
  return {loss.detach(), g.detach(), p.detach(), x.grad(), w.grad(), b.grad()};
}

TEST(Parallel, FusedOpsGiveTheSameBitsOnOneThreadAndOnTwo) {
  std::vector<torch::Tensor> one, two;
  {
    IntraOpThreads n(1);
    one = fused_ops_once();
  }
  {
    IntraOpThreads n(2);
    two = fused_ops_once();
  }
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(torch::equal(one[i], two[i])) << "output " << i;
}

}  // namespace
}  // namespace poslab
