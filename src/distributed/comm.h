// Collectives across the ranks of a run on c10d, PyTorch's distributed engine: a TCP store for the rendezvous,
// Gloo's process group on CPU, NCCL's on CUDA (where LibTorch has it). A run of one process communicates nothing.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "distributed/env.h"

namespace poslab {

// Rank `rank` of `world` trains on rows [begin, end) of every batch: contiguous, equal shares, in rank order.
struct Shard {
  int rank = 0;
  int world = 1;

  int64_t begin(int64_t rows) const { return rows / world * rank; }
  int64_t size(int64_t rows) const { return rows / world; }
  // The batch's rows of this rank (the batch itself for a world of one).
  torch::Tensor of(const torch::Tensor& batch) const;
};

// Every rank must train the same number of rows: throws poslab::Error naming `key`, its value, where it was set
// (`origin`: "configs/x.yaml: ", "--set: "; empty for a default) and the world size when `rows` does not divide
// among them.
void check_divides(const std::string& key, int64_t rows, int world, const std::string& origin = "");

class Comm {
 public:
  Comm();  // one process: no communication
  // Joins the process group of env.world_size ranks (blocks until all have arrived, at most `timeout`), with
  // Gloo on CPU and NCCL on CUDA. Every collective then fails after `timeout` rather than wait for a dead rank.
  Comm(const DistEnv& env, const torch::Device& device, std::chrono::seconds timeout);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_main() const { return rank_ == 0; }
  Shard shard() const { return {rank_, size_}; }
  const std::string& backend() const { return backend_; }

  // Sums the tensors across ranks, in place. They are packed into flat buckets of at most kBucketBytes, one
  // all-reduce per bucket, all in flight at once. `what` names the collective in errors.
  void sum_(const std::vector<torch::Tensor>& tensors, const std::string& what);
  // Copies rank 0's values into every rank's tensors.
  void broadcast_(const std::vector<torch::Tensor>& tensors, const std::string& what);
  void barrier(const std::string& what);

  // The training step the ranks are at: named in errors, and published for poslab train --nproc's failure line.
  void set_step(int64_t step);
  double seconds() const { return seconds_; }  // wall time spent in collectives so far
  int64_t calls() const { return calls_; }     // collectives run so far

  static constexpr int64_t kBucketBytes = 25 << 20;  // as PyTorch's DistributedDataParallel

 private:
  [[noreturn]] void fail(const std::string& what, const std::string& why) const;

  struct Group;  // c10d's objects, kept out of this header
  std::unique_ptr<Group> group_;
  int rank_ = 0, size_ = 1;
  std::string backend_ = "none";
  std::string label_;               // "rank R"
  std::vector<std::string> hosts_;  // rank r's "HOST (ADDRESS)", as it said when it joined
  int64_t step_ = -1;
  double seconds_ = 0;
  int64_t calls_ = 0;
};

}  // namespace poslab
