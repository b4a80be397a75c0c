// The launch environment (torchrun's, SLURM's), the row shares, the launcher's argument list and which of the
// workers that ended together it names: known answers and every error.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <map>
#include <string>

#include "distributed/comm.h"
#include "distributed/env.h"
#include "distributed/launcher.h"
#include "util/error.h"

namespace poslab {
namespace {

EnvLookup env_of(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

// The message of the poslab::Error that read_dist_env throws for `vars` ("" if none).
std::string env_error(const std::map<std::string, std::string>& vars) {
  try {
    read_dist_env(env_of(vars));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DistEnv, NoLauncherVariablesIsOneProcess) {
  const DistEnv env = read_dist_env(env_of({{"HOME", "/root"}}));
  EXPECT_EQ(env.world_size, 1);
  EXPECT_EQ(env.rank, 0);
  EXPECT_FALSE(env.distributed());
  EXPECT_EQ(rank_label(env), "");
}

TEST(DistEnv, ReadsTorchrunsVariables) {
  const DistEnv env = read_dist_env(env_of({{"RANK", "3"},
                                            {"WORLD_SIZE", "4"},
                                            {"LOCAL_RANK", "1"},
                                            {"LOCAL_WORLD_SIZE", "2"},
                                            {"MASTER_ADDR", "node7"},
                                            {"MASTER_PORT", "29411"}}));
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.world_size, 4);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 2);
  EXPECT_EQ(env.master_addr, "node7");
  EXPECT_EQ(env.master_port, 29411);
  EXPECT_FALSE(env.agent_store);
  EXPECT_EQ(env.source, "torchrun/env");
  EXPECT_EQ(rank_label(env), "rank 3");
}

TEST(DistEnv, TorchrunsAgentStoreMakesEveryRankAClientUnderItsAttemptPrefix) {
  const DistEnv env = read_dist_env(env_of({{"RANK", "0"},
                                            {"WORLD_SIZE", "2"},
                                            {"MASTER_ADDR", "127.0.0.1"},
                                            {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                            {"TORCHELASTIC_RESTART_COUNT", "2"}}));
  EXPECT_TRUE(env.agent_store);
  EXPECT_EQ(env.store_prefix, "/worker/attempt_2");
  EXPECT_EQ(env.master_port, 29500);   // PyTorch's default
  EXPECT_EQ(env.local_world_size, 2);  // no LOCAL_*: all on this machine
}

// LOCAL_RANK without LOCAL_WORLD_SIZE: the ranks on this machine are those up to it, not the whole world.
TEST(DistEnv, ALocalRankWithoutALocalWorldSizeCountsTheRanksUpToIt) {
  const DistEnv env =
      read_dist_env(env_of({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "node7"}}));
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 2);
}

TEST(DistEnv, FallsBackToSlurmsVariables) {
  const DistEnv env = read_dist_env(env_of({{"SLURM_PROCID", "5"},
                                            {"SLURM_NTASKS", "8"},
                                            {"SLURM_LOCALID", "1"},
                                            {"SLURM_NTASKS_PER_NODE", "4(x2)"},
                                            {"MASTER_ADDR", "gpu-01"}}));
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 4);
  EXPECT_EQ(env.master_addr, "gpu-01");
  EXPECT_EQ(env.source, "SLURM");
}

TEST(DistEnv, TorchrunsVariablesWinOverSlurms) {
  const DistEnv env = read_dist_env(env_of({{"RANK", "1"},
                                            {"WORLD_SIZE", "2"},
                                            {"MASTER_ADDR", "127.0.0.1"},
                                            {"SLURM_PROCID", "0"},
                                            {"SLURM_NTASKS", "1"}}));
  EXPECT_EQ(env.rank, 1);
  EXPECT_EQ(env.world_size, 2);
}

TEST(DistEnv, InconsistentOrMalformedVariablesAreErrorsNamingThem) {
  EXPECT_NE(env_error({{"RANK", "0"}}).find("RANK is set but WORLD_SIZE is not"), std::string::npos);
  EXPECT_NE(env_error({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}).find("RANK=2 with WORLD_SIZE=2"),
            std::string::npos);
  EXPECT_NE(env_error({{"RANK", "x"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}).find("RANK=x: expected an integer"),
            std::string::npos);
  EXPECT_NE(env_error({{"RANK", "0"}, {"WORLD_SIZE", "0"}}).find("WORLD_SIZE=0"), std::string::npos);
  EXPECT_NE(env_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}}).find("MASTER_ADDR is not set"), std::string::npos);
  EXPECT_NE(env_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", ""}}).find("MASTER_ADDR is empty"),
            std::string::npos);
  EXPECT_NE(env_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}})
                .find("MASTER_PORT=70000"),
            std::string::npos);
  EXPECT_NE(env_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}).find("MASTER_ADDR is not set (SLURM"),
            std::string::npos);
  EXPECT_NE(env_error({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "2"}, {"MASTER_ADDR", "h"}}).find("SLURM_PROCID=4"),
            std::string::npos);
  EXPECT_NE(
      env_error(
          {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}})
          .find("LOCAL_RANK=2 with LOCAL_WORLD_SIZE=2"),
      std::string::npos);
}

// The rank a failed collective lost, from the peer address in c10d's message and the hosts the ranks gave.
TEST(DistEnv, TheLostPeerIsNamedByItsAddress) {
  const std::vector<std::string> hosts = {"node-a (10.0.0.1)", "node-b (10.0.0.2)", "node-c (10.0.0.3)",
                                          "node-c (10.0.0.3)"};
  EXPECT_EQ(
      lost_peer("[./gloo/transport/tcp/pair.cc:589] Read error [10.0.0.2]:37032: Connection reset by peer", hosts, 0),
      "rank 1 on node-b (10.0.0.2)");
  EXPECT_EQ(lost_peer("[../pair.cc:598] Connection closed by peer [10.0.0.1]:31375", hosts, 2),
            "rank 0 on node-a (10.0.0.1)");
  EXPECT_EQ(lost_peer("Connection closed by peer [10.0.0.3]:1", hosts, 0),
            "rank 2 on node-c (10.0.0.3) or rank 3 on node-c (10.0.0.3)");
  EXPECT_EQ(lost_peer("Connection closed by peer [10.0.0.3]:1", hosts, 2), "rank 3 on node-c (10.0.0.3)");
  EXPECT_EQ(lost_peer("Timed out waiting 20000ms for recv operation to complete", hosts, 0), "");  // four ranks
  const std::vector<std::string> two = {"a (127.0.0.1)", "a (127.0.0.1)"};
  EXPECT_EQ(lost_peer("Timed out waiting 20000ms for recv operation to complete", two, 1), "rank 0 on a (127.0.0.1)");
  EXPECT_EQ(lost_peer("Connection closed by peer [127.0.0.1]:5", two, 0), "rank 1 on a (127.0.0.1)");
}

TEST(DistEnv, ARanksAddressIsTheOneThatReachesTheMaster) {
  const std::string here = host_and_address("127.0.0.1", 29500);
  EXPECT_NE(here.find(" (127.0.0.1)"), std::string::npos) << here;
}

TEST(DistEnv, FreePortIsAUsablePort) {
  // The port is free: a server binds it on loopback and listens, and a client connects to it there.
  const int port = free_tcp_port();
  ASSERT_GT(port, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const int server = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(server, 0) << std::strerror(errno);
  EXPECT_EQ(::bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0)
      << "port " << port << ": " << std::strerror(errno);
  EXPECT_EQ(::listen(server, 1), 0) << std::strerror(errno);
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(client, 0) << std::strerror(errno);
  EXPECT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0)
      << "port " << port << ": " << std::strerror(errno);
  ::close(client);
  ::close(server);
}

TEST(Shard, RanksTakeEqualContiguousSharesInOrder) {
  const auto batch = torch::arange(12).view({6, 2});  // (B, T) = (6, 2)
  const Shard r0{0, 3}, r2{2, 3};
  EXPECT_EQ(r0.begin(6), 0);
  EXPECT_EQ(r2.begin(6), 4);
  EXPECT_EQ(r2.size(6), 2);
  EXPECT_TRUE(torch::equal(r2.of(batch), batch.narrow(0, 4, 2)));
  EXPECT_TRUE(torch::equal(Shard{}.of(batch), batch));
  // The shares, in rank order, are the batch.
  EXPECT_TRUE(torch::equal(torch::cat({Shard{0, 3}.of(batch), Shard{1, 3}.of(batch), r2.of(batch)}), batch));
}

TEST(Shard, ABatchThatDoesNotDivideIsAnErrorNamingBothNumbers) {
  EXPECT_NO_THROW(check_divides("train.batch_size", 8, 4));
  try {
    check_divides("train.batch_size", 6, 4);
    FAIL() << "6 rows among 4 processes was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train.batch_size = 6 does not divide among 4 processes"), std::string::npos)
        << e.what();
    EXPECT_NE(e.hint().find("multiple of 4"), std::string::npos) << e.hint();
  }
}

// Workers that ended within one look of the launcher: the one to name comes first. Rank 1 killed (SIGKILL) while
// rank 0 died of SIGPIPE on its closed connection (the case CI met): rank 1. A failed exit before a broken pipe
// or a success; a signal before a failed exit; equals in rank order.
TEST(Launcher, NamesTheCauseOfWorkersThatEndedTogether) {
  const int killed = SIGKILL, pipe = SIGPIPE, exit1 = 1 << 8, ok = 0;  // wait statuses (signal, or code << 8)
  ASSERT_TRUE(WIFSIGNALED(killed) && WTERMSIG(killed) == SIGKILL && WIFEXITED(exit1) && WEXITSTATUS(exit1) == 1);
  EXPECT_EQ(by_likely_cause({pipe, killed}), (std::vector<int>{1, 0}));
  EXPECT_EQ(by_likely_cause({pipe, exit1, ok}), (std::vector<int>{1, 0, 2}));
  EXPECT_EQ(by_likely_cause({exit1, killed}), (std::vector<int>{1, 0}));
  EXPECT_EQ(by_likely_cause({exit1, exit1, pipe}), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(by_likely_cause({}), std::vector<int>{});
}

TEST(Launcher, WorkersRunTheCommandWithoutNproc) {
  EXPECT_EQ(without_nproc({"poslab", "train", "c.yaml", "--nproc", "2", "--set", "a=1"}),
            (std::vector<std::string>{"poslab", "train", "c.yaml", "--set", "a=1"}));
  EXPECT_EQ(without_nproc({"poslab", "train", "--nproc=4", "c.yaml"}),
            (std::vector<std::string>{"poslab", "train", "c.yaml"}));
}

}  // namespace
}  // namespace poslab
