#include "distributed/env.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "util/error.h"
#include "util/process.h"

namespace poslab {
namespace {

const char* kLaunchHint =
    "launch with torchrun, srun or poslab train --nproc N, which set these variables consistently";

// The integer value of `name`, or `fallback` when unset.
int int_var(const EnvLookup& getenv, const char* name, int fallback, int min = 0) {
  const char* v = getenv(name);
  if (v == nullptr) return fallback;
  errno = 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || errno != 0 || n < min || n > INT_MAX)
    throw Error(std::string(name) + "=" + v + ": expected an integer of at least " + std::to_string(min), kLaunchHint);
  return static_cast<int>(n);
}

// SLURM_NTASKS_PER_NODE reads "2", "2(x3)" or "2,1": the first node's count.
int slurm_tasks_per_node(const EnvLookup& getenv) {
  for (const char* name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
    const char* v = getenv(name);
    if (v == nullptr) continue;
    const int n = std::atoi(v);
    if (n > 0) return n;
  }
  return 1;
}

void check_rank(const char* rank_name, int rank, const char* size_name, int size) {
  if (rank >= size)
    throw Error(std::string(rank_name) + "=" + std::to_string(rank) + " with " + size_name + "=" +
                    std::to_string(size) + ": a rank must be below the world size",
                kLaunchHint);
}

}  // namespace

DistEnv read_dist_env(const EnvLookup& getenv) {
  DistEnv env;
  if (getenv("RANK") != nullptr || getenv("WORLD_SIZE") != nullptr) {
    if (getenv("RANK") == nullptr || getenv("WORLD_SIZE") == nullptr)
      throw Error(std::string(getenv("RANK") ? "RANK" : "WORLD_SIZE") + " is set but " +
                      (getenv("RANK") ? "WORLD_SIZE" : "RANK") + " is not",
                  kLaunchHint);
    env.source = "torchrun/env";
    env.world_size = int_var(getenv, "WORLD_SIZE", 1, 1);
    env.rank = int_var(getenv, "RANK", 0);
    check_rank("RANK", env.rank, "WORLD_SIZE", env.world_size);
    env.local_rank = int_var(getenv, "LOCAL_RANK", env.rank);
    env.local_world_size =
        int_var(getenv, "LOCAL_WORLD_SIZE", getenv("LOCAL_RANK") ? env.local_rank + 1 : env.world_size, 1);
    check_rank("LOCAL_RANK", env.local_rank, "LOCAL_WORLD_SIZE", env.local_world_size);
  } else if (getenv("SLURM_PROCID") != nullptr && getenv("SLURM_NTASKS") != nullptr) {
    env.source = "SLURM";
    env.world_size = int_var(getenv, "SLURM_NTASKS", 1, 1);
    env.rank = int_var(getenv, "SLURM_PROCID", 0);
    check_rank("SLURM_PROCID", env.rank, "SLURM_NTASKS", env.world_size);
    env.local_rank = int_var(getenv, "SLURM_LOCALID", 0);
    env.local_world_size = std::max(slurm_tasks_per_node(getenv), env.local_rank + 1);
    if (env.world_size > 1 && getenv("MASTER_ADDR") == nullptr)
      throw Error("MASTER_ADDR is not set (SLURM job with SLURM_NTASKS=" + std::to_string(env.world_size) + ")",
                  "export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1) before srun "
                  "(see scripts/slurm_example.sh)");
  } else {
    return env;  // one process
  }
  if (const char* addr = getenv("MASTER_ADDR")) {
    if (*addr == '\0') throw Error("MASTER_ADDR is empty", "set it to the host name or address of rank 0's machine");
    env.master_addr = addr;
  } else if (env.world_size > 1) {
    throw Error("MASTER_ADDR is not set (WORLD_SIZE=" + std::to_string(env.world_size) + ")",
                "set MASTER_ADDR to rank 0's host (127.0.0.1 on one machine); " + std::string(kLaunchHint));
  }
  env.master_port = int_var(getenv, "MASTER_PORT", 29500, 1);
  if (env.master_port > 65535)
    throw Error("MASTER_PORT=" + std::to_string(env.master_port) + ": not a TCP port (1-65535)", kLaunchHint);
  if (const char* agent = getenv("TORCHELASTIC_USE_AGENT_STORE"); agent && std::strcmp(agent, "True") == 0) {
    env.agent_store = true;
    const char* attempt = getenv("TORCHELASTIC_RESTART_COUNT");
    env.store_prefix = std::string("/worker/attempt_") + (attempt ? attempt : "0");
  }
  return env;
}

int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw Error(std::string("socket(): ") + std::strerror(errno), "");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;  // the kernel picks a free one
  socklen_t len = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) throw Error(std::string("no free TCP port on 127.0.0.1: ") + std::strerror(err), "set MASTER_PORT yourself");
  return ntohs(addr.sin_port);
}

std::string rank_label(const DistEnv& env) { return env.distributed() ? "rank " + std::to_string(env.rank) : ""; }

std::string error_prefix() {
  try {
    const DistEnv env = read_dist_env();
    return env.distributed() ? rank_label(env) + ": " : "";
  } catch (const Error&) {
    return "";
  }
}

std::string host_and_address(const std::string& master_addr, int master_port) {
  const std::string host = host_name();
  // A UDP socket "connected" to the master sends nothing, but the kernel picks the local address of its route.
  std::string address = "?";
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(master_addr.c_str(), std::to_string(master_port).c_str(), &hints, &found) == 0 && found) {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in local{};
    socklen_t len = sizeof local;
    char text[INET_ADDRSTRLEN] = {0};
    if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text))
      address = text;
    if (fd >= 0) ::close(fd);
    ::freeaddrinfo(found);
  }
  return host + " (" + address + ")";
}

std::string lost_peer(const std::string& message, const std::vector<std::string>& hosts, int self) {
  std::vector<int> ranks;
  // c10d names the peer as "[10.0.0.2]:4051" ("Connection closed by peer [...]", "Read error [...]"); the
  // brackets that open with a letter or a dot name Gloo's source file.
  auto open = message.find('[');
  while (open != std::string::npos &&
         !(open + 1 < message.size() && std::isdigit(static_cast<unsigned char>(message[open + 1]))))
    open = message.find('[', open + 1);
  const auto close = open == std::string::npos ? std::string::npos : message.find(']', open);
  if (close != std::string::npos) {
    const std::string address = "(" + message.substr(open + 1, close - open - 1) + ")";
    for (int r = 0; r < static_cast<int>(hosts.size()); ++r)
      if (r != self && hosts[r].size() >= address.size() &&
          hosts[r].compare(hosts[r].size() - address.size(), address.size(), address) == 0)
        ranks.push_back(r);
  }
  if (ranks.empty() && hosts.size() == 2) ranks.push_back(1 - self);
  if (ranks.empty() || ranks.size() > 3) return "";
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i)
    out += (i == 0 ? "" : " or ") + ("rank " + std::to_string(ranks[i]) + " on " + hosts[ranks[i]]);
  return out;
}

}  // namespace poslab
