// c10d collectives between two ranks in threads of this process (Gloo over loopback, a TCP store): sums in
// buckets, broadcast, and the errors when a rank is missing or gone.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "distributed/comm.h"
#include "distributed/env.h"
#include "util/error.h"

namespace poslab {
namespace {

using std::chrono::seconds;

DistEnv rank_of_two(int rank, int port) {
  DistEnv env;
  env.rank = rank;
  env.world_size = 2;
  env.local_rank = rank;
  env.local_world_size = 2;
  env.master_addr = "127.0.0.1";
  env.master_port = port;
  env.source = "test";
  return env;
}

// Runs body(rank, comm) on two ranks at once, each in its own thread; the first failure fails the test.
void on_two_ranks(const std::function<void(int, Comm&)>& body, seconds timeout = seconds(30)) {
  const int port = free_tcp_port();
  std::string errors[2];
  auto run = [&](int rank) {
    try {
      Comm comm(rank_of_two(rank, port), torch::kCPU, timeout);
      body(rank, comm);
    } catch (const std::exception& e) {
      errors[rank] = e.what();
    }
  };
  std::thread other(run, 1);
  run(0);
  other.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

TEST(Comm, OneProcessCommunicatesNothing) {
  Comm comm;
  EXPECT_EQ(comm.size(), 1);
  EXPECT_TRUE(comm.is_main());
  auto t = torch::full({3}, 2.0f);
  comm.sum_({t}, "a sum");
  comm.broadcast_({t}, "a broadcast");
  comm.barrier("a barrier");
  EXPECT_TRUE(torch::equal(t, torch::full({3}, 2.0f)));
  EXPECT_EQ(comm.calls(), 0);
}

TEST(Comm, SumsEveryTensorAcrossRanksInBuckets) {
  on_two_ranks([](int rank, Comm& comm) {
    EXPECT_EQ(comm.size(), 2);
    EXPECT_EQ(comm.rank(), rank);
    EXPECT_EQ(comm.backend(), "gloo");
    // 2 x 16 MiB of float32 and small tensors of other shapes: more than one 25 MiB bucket, a 0-dim scalar, and a
    // float64 tensor that starts a bucket of its own.
    const int64_t big = 4 << 20;
    std::vector<torch::Tensor> ts = {
        torch::full({big}, 1.0f + rank), torch::arange(6, torch::kFloat32).view({2, 3}) * (rank + 1),
        torch::full({big}, -1.0f * rank), torch::full({}, 0.5f), torch::full({2}, 1.0 + rank, torch::kFloat64)};
    comm.sum_(ts, "the test's sum");
    EXPECT_TRUE(torch::equal(ts[0], torch::full({big}, 3.0f)));
    EXPECT_TRUE(torch::equal(ts[1], torch::arange(6, torch::kFloat32).view({2, 3}) * 3)) << ts[1];
    EXPECT_TRUE(torch::equal(ts[2], torch::full({big}, -1.0f)));
    EXPECT_EQ(ts[3].item<float>(), 1.0f);
    EXPECT_TRUE(torch::equal(ts[4], torch::full({2}, 3.0, torch::kFloat64)));
    EXPECT_EQ(comm.calls(), 1);
    EXPECT_GT(comm.seconds(), 0.0);
  });
}

TEST(Comm, BroadcastCopiesRankZerosValues) {
  on_two_ranks([](int rank, Comm& comm) {
    auto a = torch::full({4, 4}, static_cast<float>(rank + 10));
    auto b = torch::arange(8, torch::kFloat32).view({2, 4}).t() * (rank + 1);  // not contiguous
    comm.broadcast_({a, b}, "the test's broadcast");
    EXPECT_TRUE(torch::equal(a, torch::full({4, 4}, 10.0f)));
    EXPECT_TRUE(torch::equal(b, torch::arange(8, torch::kFloat32).view({2, 4}).t())) << b;
  });
}

TEST(Comm, AMissingRankIsAnErrorAfterTheTimeout) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    Comm comm(rank_of_two(0, free_tcp_port()), torch::kCPU, seconds(2));  // rank 1 never comes
    FAIL() << "joined a group of two alone";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("could not join the 2 processes at 127.0.0.1"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("run.dist_timeout_s"), std::string::npos);
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(waited, 30.0) << "the 2 s timeout did not bound the wait";
}

TEST(Comm, ASumWithARankThatLeftFailsNamingTheStep) {
  const int port = free_tcp_port();
  std::string error;
  double waited = 0;
  std::thread other([&] {
    Comm comm(rank_of_two(1, port), torch::kCPU, seconds(3));
    comm.barrier("the test's barrier");
  });  // rank 1 leaves: its comm is destroyed
  {
    Comm comm(rank_of_two(0, port), torch::kCPU, seconds(3));
    comm.barrier("the test's barrier");
    other.join();
    comm.set_step(12);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      auto t = torch::ones({3});
      comm.sum_({t}, "the gradient sum");
    } catch (const Error& e) {
      error = e.what();
    }
    waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  EXPECT_NE(error.find("the gradient sum at step 12 failed"), std::string::npos) << error;
  EXPECT_LT(waited, 20.0) << "a 3 s timeout did not bound the wait";
}

}  // namespace
}  // namespace poslab
