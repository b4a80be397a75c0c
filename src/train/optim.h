// AdamW with two parameter groups: 2-D weights decayed, biases and norms not (nanoGPT's split).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "config/config.h"
#include "model/gpt.h"
#include "train/device_adamw.h"

namespace poslab {

struct ParamGroups {
  std::vector<std::string> decay_names, no_decay_names, position_names;
  std::vector<torch::Tensor> decay, no_decay, position;  // position: wpe alone, when it has a group of its own
};

// train.trainable: "all" leaves every parameter as the model made it; "wpe" freezes all but the position table.
void set_trainable(GPT& model, const std::string& trainable);

// Trainable parameters only (a fixed sinusoidal wpe is left out). wpe follows train.decay_position_table, or goes
// into `position` alone with own_position_group.
ParamGroups split_param_groups(const GPT& model, bool decay_position_table, bool own_position_group = false);

// Whether wpe gets an AdamW group of its own: a learning rate other than the rest's (train.position_lr_scale).
bool position_has_own_group(const TrainConfig& t);

// Group 0 decays with train.weight_decay, group 1 has weight decay 0, and group 2, where position_has_own_group,
// holds wpe with lr × train.position_lr_scale (decayed as train.decay_position_table says). LibTorch's AdamW, which
// can also step on the parameters' device (train/device_adamw.h).
std::unique_ptr<DeviceAdamW> make_optimizer(const GPT& model, const TrainConfig& t);

// Whether the step's clip and AdamW run on the parameters' device with no read back to the host (DeviceAdamW)
// rather than poslab's CPU kernel (fused_adamw_step): train.adamw fused, or auto on CUDA where LibTorch has the
// kernel. train.adamw fused where it cannot run is a poslab::Error naming the key and the reason.
bool adamw_on_device(const TrainConfig& t, const torch::Device& device);

// The global gradient norm of the optimizer's parameters as a 0-dim float32 tensor on their device (one
// multi-tensor pass; nothing read back to the host); undefined when no parameter has a gradient.
torch::Tensor grad_norm_on_device(const torch::optim::AdamW& opt);

// The key of a parameter's entry in Optimizer::state(): LibTorch 1.x keys it by the TensorImpl's address printed
// as a string, 2.x by the address itself. Chosen from the map's key type, so both compile.
using OptimizerStateKey = std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;
OptimizerStateKey optimizer_state_key(const torch::Tensor& param);

// A parameter's AdamW state, made as AdamW::step makes it on the parameter's first step (step 0, zero moments).
torch::optim::AdamWParamState& adamw_state(torch::optim::AdamW& opt, const torch::Tensor& param);

// Sets the lr of every group (group 2's scaled by train.position_lr_scale), and restores each group's weight decay
// (LibTorch 1.13's load does not).
void set_optimizer_hparams(torch::optim::AdamW& opt, double lr, const TrainConfig& t);

// Global gradient norm of the optimizer's parameters (L2 over all of them), in one pass per parameter.
double grad_norm(const torch::optim::AdamW& opt);

// The same norm, and the value of `scalar` (a 0-dim tensor on the parameters' device, e.g. the step's loss): from a
// GPU both come to the host in one copy, the step's only synchronisation.
std::pair<double, double> grad_norm_and(const torch::optim::AdamW& opt, const torch::Tensor& scalar);

// One AdamW step of every parameter with a gradient, fused: one pass over each parameter, its gradient and its
// two moments, with the gradient multiplied by grad_scale on the way (clipping without a pass of its own).
// Same state as LibTorch's AdamW (checkpoints are interchangeable) and the same arithmetic to float rounding
// (tests/train/test_optim.cpp). Float32 CPU parameters only; others fall back to AdamW::step.
// With `run`, the update is cut into equal parts of all the parameters' elements, and run(f) calls f(part, parts)
// for each (the batch split's threads: BatchSplit::run_parts); without, each parameter is split over the intra-op
// threads. The update is elementwise: the result is the same either way.
using PartRunner = std::function<void(const std::function<void(int part, int parts)>&)>;
void fused_adamw_step(torch::optim::AdamW& opt, double grad_scale, const PartRunner& run = {});

}  // namespace poslab
