// AdamW with two parameter groups: 2-D weights decayed, biases and norms not (nanoGPT's split).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "model/gpt.h"

namespace poslab {

struct ParamGroups {
  std::vector<std::string> decay_names, no_decay_names;
  std::vector<torch::Tensor> decay, no_decay;
};

// Trainable parameters only (a fixed sinusoidal wpe is left out). wpe follows train.decay_position_table.
ParamGroups split_param_groups(const GPT& model, bool decay_position_table);

// Group 0 decays with train.weight_decay, group 1 has weight decay 0.
std::unique_ptr<torch::optim::AdamW> make_optimizer(const GPT& model, const TrainConfig& t);

// Sets the lr of every group, and restores each group's weight decay (LibTorch 1.13's load does not).
void set_optimizer_hparams(torch::optim::AdamW& opt, double lr, const TrainConfig& t);

}  // namespace poslab
