// The training step on a GPU captured once as a CUDA graph and replayed (train.cuda_graph): the step's hundreds of
// kernel launches become one graph launch, which is where small models on a big GPU spend their time.
//
// A graph replays the kernels it recorded on the memory it recorded, so everything a step changes from one step to
// the next is an input written before each replay: the micro-batches (copied into the graph's own batch tensors),
// the learning rate (DeviceAdamW::set_lr's tensors) and the step counts (device tensors that the graph itself
// advances). The loss, the gradient norm and the skip flag come out in the graph's own tensors, and are copied out
// after each replay, so that a step's result is not overwritten by the next.
//
// The first kEagerSteps steps run as usual (they create AdamW's state and the libraries' workspaces, which a
// capture must find made); the next is captured and replayed; every later one replays. A replay runs the eager
// step's kernels on the same values, so the numbers are the same either way and a resumed run, whose first steps
// are again eager, matches the uninterrupted one: Devices/StepGraphOnDevice and TrainerOnDevice check it, on a GPU
// in their CUDA cases.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/batches.h"
#include "model/batch_split.h"
#include "model/gpt.h"
#include "train/device_adamw.h"
#include "train/step.h"

namespace poslab {

// Why train.cuda_graph cannot run with this config on `device` with `processes` processes, "" when it can: a
// graph needs one process on a GPU, the step on the device (train.adamw auto or fused, LibTorch 2.4 or later) and
// no dropout (its random numbers would be drawn at capture).
std::string cuda_graph_unsupported(const Config& cfg, const torch::Device& device, int processes);

// train.cuda_graph where it cannot run: a poslab::Error naming the key and why, with what to do.
void check_cuda_graph(const Config& cfg, const torch::Device& device, int processes);

class StepGraph {
 public:
  // Steps run eagerly before the capture.
  static constexpr int kEagerSteps = 3;

  // `emulated`: no CUDA graph; the captured step is run again at each "replay", on the same batch tensors, rates and
  // copies out. The CPU tests check the graph's plumbing so; a GPU checks the graph itself.
  StepGraph(GPT model, DeviceAdamW& optimizer, const TrainConfig& t, const torch::Device& device, BatchSplit* split,
            bool emulated = false);
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // One update on train.grad_accum micro-batches drawn from `sampler` (train_step's), at learning rate `lr`.
  StepResult step(BatchSampler& sampler, double lr);
  // The same on the given micro-batches (on the host or the device; their shapes must stay those of the first).
  StepResult step_on(const std::vector<Batch>& micro_batches, double lr);

  int64_t replays() const { return std::max<int64_t>(0, steps_ - kEagerSteps); }

 private:
  struct Graph;  // the CUDA graph and its stream (CUDA builds), or the emulation's step

  StepResult eager(const std::vector<Batch>& micro_batches, double lr);
  void capture(const std::vector<Batch>& micro_batches);
  void copy_in(const std::vector<Batch>& micro_batches);
  StepResult copy_out() const;

  GPT model_;
  DeviceAdamW& optimizer_;
  const TrainConfig t_;
  const torch::Device device_;
  BatchSplit* split_;
  const bool emulated_;
  std::unique_ptr<Graph> graph_;
  std::vector<torch::Tensor> batches_;  // per micro-batch, (2, B, T) int64 on the device: x and y
  StepResult out_;                      // the captured step's outputs (loss, norm, skip), rewritten by each replay
  int64_t steps_ = 0;                   // steps taken, the eager ones included
};

}  // namespace poslab
