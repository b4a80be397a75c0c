#include "train/schedule.h"

#include <algorithm>
#include <cmath>

namespace poslab {

double lr_at(int step, const TrainConfig& t) {
  if (step < t.warmup_steps) return t.lr * (step + 1) / (t.warmup_steps + 1);
  if (step >= t.max_steps || t.max_steps <= t.warmup_steps) return t.min_lr;
  const double progress = static_cast<double>(step - t.warmup_steps) / (t.max_steps - t.warmup_steps);
  const double coeff = 0.5 * (1.0 + std::cos(M_PI * std::clamp(progress, 0.0, 1.0)));
  return t.min_lr + coeff * (t.lr - t.min_lr);
}

}  // namespace poslab
