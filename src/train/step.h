// One optimizer update, shared by the trainer and the benchmark.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "config/config.h"
#include "data/batches.h"
#include "distributed/comm.h"
#include "model/gpt.h"

namespace poslab {

class DirectPass;

struct StepResult {
  torch::Tensor loss;    // mean loss, 0-dim (read once for the finiteness check, unless `unread`)
  double grad_norm = 0;  // global gradient norm before clipping
  bool finite = true;    // loss and gradient norm are finite; when not, the optimizer did not step
  bool stop = false;     // many processes: some rank had a stop request (SIGINT / SIGTERM) at the step's sum
  // The step on the device (train.adamw, adamw_on_device): nothing was read back; the norm and whether the step was
  // skipped for a non-finite loss or gradient (1, else 0) are 0-dim tensors on the device, and grad_norm and
  // finite above mean nothing until the caller reads them.
  bool unread = false;
  torch::Tensor device_norm, device_skipped;
};

// Batch-parallel forward and backward on CPU (ways 1: the plain step). Each part steps by autograd or by the
// whole-model pass, as kernel_paths().step says. Each micro-batch is cut into `ways` slices along the batch; slice
// i runs in its own thread on replica i of the model, with one intra-op thread each, so every core works on
// every op, small ones included, with no fork/join inside ops. Replicas share the parameters' storage (the
// optimizer's in-place update reaches all of them) but keep their own gradients, which are added into the
// model's in replica order: the result does not depend on thread timing, and it equals the whole-batch
// gradient to float rounding (each slice's loss is weighted by its share of the batch).
class BatchSplit {
 public:
  BatchSplit(GPT& model, int ways);  // ways 1: no threads, the plain step
  ~BatchSplit();
  BatchSplit(const BatchSplit&) = delete;
  BatchSplit& operator=(const BatchSplit&) = delete;

  int ways() const { return ways_; }
  // Forward (bf16 autocast if asked) and backward of x, y; the loss is scaled by `scale` before backward.
  // Returns the scaled mean loss, detached.
  torch::Tensor forward_backward(const torch::Tensor& x, const torch::Tensor& y, double scale, bool bf16,
                                 const torch::Device& device);
  // The scaled mean loss of x, y without a backward (evaluation), cut into the same slices on the same threads,
  // each by its whole-model pass where it can run (else the model's forward under no_grad).
  torch::Tensor loss(const torch::Tensor& x, const torch::Tensor& y, double scale, bool bf16,
                     const torch::Device& device);
  // Adds the replicas' gradients into the model's, in order (float32 CPU ones on the parts' threads), and clears
  // them.
  void reduce_grads();
  // f(part, ways) for every part in 0 .. ways - 1: part 0 on this thread, the others on the slices' threads (one
  // intra-op thread each); returns when all have returned, rethrowing the first part's exception.
  void run_parts(const std::function<void(int part, int parts)>& f);

 private:
  void share_parameters();  // (re)points every replica parameter at the model's storage
  torch::Tensor run_slices(const torch::Tensor& x, const torch::Tensor& y, double scale, bool bf16,
                           const torch::Device& device, bool backward);
  // Part i's whole-model pass (model/direct_pass.h) when kernel_paths().step is direct and it can run the step,
  // else null (the part steps by autograd).
  DirectPass* direct_pass(int i, bool bf16, const torch::Device& device);

  class Worker;  // a thread kept for the whole run (starting one per step cost 2-4 ms, measured)

  GPT model_;
  int ways_;
  std::vector<GPT> replicas_;                        // ways - 1 of them; slice 0 runs on the model itself
  std::vector<std::unique_ptr<Worker>> workers_;     // one per replica
  std::vector<std::unique_ptr<DirectPass>> direct_;  // per part, made when first used
};

// While alive, LibTorch's intra-op thread count on this thread is n (0: left alone); then the previous one again.
class IntraOpThreads {
 public:
  explicit IntraOpThreads(int n);
  ~IntraOpThreads();
  IntraOpThreads(const IntraOpThreads&) = delete;
  IntraOpThreads& operator=(const IntraOpThreads&) = delete;

 private:
  int previous_ = 0;
};

// The number of slices run.batch_split asks for: auto = one per intra-op thread on CPU when the model has no
// dropout, else 1; never more than this process's rows of the batch (train.batch_size / `processes`).
int batch_split_ways(const Config& cfg, int threads, const torch::Device& device, int processes = 1);

// grad_accum micro-batches (forward under bf16 autocast when train.dtype says so), backward, clip, AdamW step.
// A non-finite loss or gradient norm skips the optimizer step (the caller decides to stop or go on). With the step
// on the device (adamw_on_device: CUDA, or train.adamw fused), the norm, the clip, the skip and AdamW stay there and
// the result is `unread`: the host only queues work, and reads when it logs.
// With `split`, each micro-batch runs batch-parallel (see BatchSplit), and the rest of the step keeps one intra-op
// thread per thread too (AdamW is shared among the slices' threads): LibTorch's other OpenMP threads, once woken,
// spin on past their work into the next step's slices, on the cores the slices run on.
// With `comm` (data parallel over its ranks): every rank draws the same micro-batches from the same sampler and
// trains on its shard of each; one sum across ranks per step (the gradients, the loss and the stop flag, in
// buckets) comes before the norm, the clipping and AdamW, so every rank makes the same update, the one a single
// process would make up to the order of float sums.
StepResult train_step(GPT& model, torch::optim::AdamW& optimizer, BatchSampler& sampler, const TrainConfig& t,
                      double lr, const torch::Device& device, BatchSplit* split = nullptr, Comm* comm = nullptr);

// The same update on the given micro-batches (train_step draws train.grad_accum of them from the sampler); the
// loss is their mean.
StepResult train_step_on(GPT& model, torch::optim::AdamW& optimizer, const std::vector<Batch>& micro_batches,
                         const TrainConfig& t, double lr, const torch::Device& device, BatchSplit* split = nullptr,
                         Comm* comm = nullptr);

}  // namespace poslab
