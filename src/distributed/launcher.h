// poslab train --nproc N: starts N worker processes on this machine, as torchrun --standalone would, and watches
// them. Each worker runs the same command line (without --nproc) with RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a free MASTER_PORT set. No LibTorch here.
#pragma once

#include <string>
#include <vector>

namespace poslab {

struct LocalLaunch {
  int nproc = 2;
  std::vector<std::string> argv;  // the workers' command line; argv[0] is only their name
  int grace_s = 10;               // after a worker fails and the others get SIGTERM, this long before SIGKILL
};

// Runs the workers to the end and returns the exit status: 0 when all succeed. When one fails (non-zero exit or
// killed by a signal), one line names its rank, pid, status and step; the others get SIGTERM if still running 2 s
// later and SIGKILL grace_s after that; its status is returned (128 + signal for a signal). SIGINT / SIGTERM to
// the launcher is passed on to every worker once, so all of them stop at the same step with one checkpoint.
int launch_local(const LocalLaunch& launch);

// Of workers that ended together, with these wait statuses, the order in which to judge them: the likeliest cause
// of a failure first — killed by a signal, then a non-zero exit, then a success or a death by SIGPIPE (a peer
// writing to the failed worker's closed connection) — and in the given order among equals. Indices into statuses.
std::vector<int> by_likely_cause(const std::vector<int>& statuses);

// The argument list without `--nproc N` / `--nproc=N`.
std::vector<std::string> without_nproc(const std::vector<std::string>& args);

}  // namespace poslab
