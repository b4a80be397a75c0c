// A batch's forward and backward split across threads, each slice on its own replica of the model (CPU), and
// LibTorch's intra-op thread count held for a scope. Shared by the training step (train/step.h) and the kernel-path
// measurement (tune/).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

#include "model/gpt.h"

namespace poslab {

class DirectPass;

// The scaled loss of x, y (forward under bf16 autocast when asked), and with `backward` its gradients; by `direct`,
// the whole-model pass, when given. Returns the loss, detached.
torch::Tensor slice_loss(GPT& model, const torch::Tensor& x, const torch::Tensor& y, double scale, bool bf16,
                         const torch::Device& device, DirectPass* direct = nullptr, bool backward = true);

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

}  // namespace poslab
