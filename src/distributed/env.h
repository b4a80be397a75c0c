// Where this process stands in a multi-process run, read from the launcher's environment: torchrun's (and
// poslab train --nproc's) RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, or SLURM's
// SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE when those are absent. No LibTorch here.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace poslab {

struct DistEnv {
  int rank = 0;                           // 0 .. world_size - 1; rank 0 writes the run folder
  int world_size = 1;                     // processes in the run, on all machines
  int local_rank = 0;                     // index among this machine's processes (its GPU on CUDA)
  int local_world_size = 1;               // processes on this machine: they share its cores
  std::string master_addr = "127.0.0.1";  // host of the rendezvous store (rank 0's machine)
  int master_port = 29500;
  bool agent_store = false;               // torchrun's agent hosts the store: every rank is a client
  std::string store_prefix;               // key prefix in the agent's store ("/worker/attempt_N")
  std::string source = "single process";  // "torchrun/env", "SLURM" or "single process", for the log

  bool distributed() const { return world_size > 1; }
};

// The environment as a lookup (nullptr = unset); std::getenv by default, a map in tests.
using EnvLookup = std::function<const char*(const char*)>;

// Throws poslab::Error naming the variable and its value when they are malformed or inconsistent
// (RANK=2 with WORLD_SIZE=2, a missing MASTER_ADDR under SLURM, a port out of range, ...).
DistEnv read_dist_env(const EnvLookup& getenv = [](const char* name) -> const char* { return std::getenv(name); });

// A TCP port on the loopback interface that nobody listens on now (for a local launch's rendezvous).
int free_tcp_port();

// Where a rank runs, as the ranks tell each other when they join: "HOST (ADDRESS)", ADDRESS being the one this
// machine reaches `master_addr` from (its address on the run's network; 127.0.0.1 when all run here).
std::string host_and_address(const std::string& master_addr, int master_port);

// Which rank a failed collective lost, for its error: the ranks other than `self` whose address is the peer
// address in c10d's message ("Connection closed by peer [10.0.0.2]:4051", "Read error [10.0.0.2]:4051"), or with
// two ranks the other one:
// "rank 1 on node-b (10.0.0.2)"; "" when it cannot tell. `hosts[r]` is rank r's host_and_address.
std::string lost_peer(const std::string& message, const std::vector<std::string>& hosts, int self);

// "rank R" label for logs and errors ("" in a single process).
std::string rank_label(const DistEnv& env);

// "rank R: " when this process is one rank of several (from the environment, never throws), else "": main puts
// it before every error line, so that the launcher's terminal says which rank failed.
std::string error_prefix();

}  // namespace poslab
