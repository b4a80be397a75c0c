// Learning-rate schedule: linear warmup to train.lr, then cosine decay to train.min_lr at train.max_steps.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"

namespace poslab {

// lr for the update that takes the model from `step` to `step + 1`.
//   step < warmup:  lr * (step + 1) / (warmup + 1)
//   after:          min_lr + 0.5 (1 + cos(pi * progress)) (lr - min_lr), progress = (step - warmup) / (max_steps -
//   warmup)
double lr_at(int step, const TrainConfig& t);

// What the user should hear of a schedule that does not do what its keys suggest: warmup as long as the run or
// longer (the learning rate climbs the whole run, never reaching train.lr, and never decays). "" when there is none.
std::string schedule_warning(const TrainConfig& t);

// A resumed run whose train.max_steps or warmup_steps changed (`before`: the checkpoint's, `now`: with --set): the
// schedule is laid anew over the whole run, so the rate at `step` jumps or drops from the one the run had. Names the
// change and both rates; "" when the rate at `step` stays (within 0.1 %).
std::string resumed_schedule_warning(const TrainConfig& before, const TrainConfig& now, int64_t step);

}  // namespace poslab
