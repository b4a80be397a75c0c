// Learning-rate schedule: linear warmup to train.lr, then cosine decay to train.min_lr at train.max_steps.
#pragma once

#include "config/config.h"

namespace poslab {

// lr for the update that takes the model from `step` to `step + 1`.
//   step < warmup:  lr * (step + 1) / (warmup + 1)
//   after:          min_lr + 0.5 (1 + cos(pi * progress)) (lr - min_lr), progress = (step - warmup) / (max_steps -
//   warmup)
double lr_at(int step, const TrainConfig& t);

}  // namespace poslab
