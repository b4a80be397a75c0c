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
#include "model/batch_split.h"
#include "model/gpt.h"
#include "train/device_adamw.h"

namespace poslab {

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

// The same update on one process, the step on the device, at the learning rates optimizer.set_lr wrote last: the
// step a CUDA graph captures (train/step_graph.h), whose rate is then an input written before each replay.
// set_optimizer_hparams (train/optim.h) is the caller's too.
StepResult train_step_at_set_lr(GPT& model, DeviceAdamW& optimizer, const std::vector<Batch>& micro_batches,
                                const TrainConfig& t, const torch::Device& device, BatchSplit* split = nullptr);

}  // namespace poslab
