#include "train/schedule.h"

#include <algorithm>
#include <cmath>

#include <spdlog/fmt/fmt.h>

namespace poslab {

double lr_at(int step, const TrainConfig& t) {
  if (step < t.warmup_steps) return t.lr * (step + 1) / (t.warmup_steps + 1);
  if (step >= t.max_steps || t.max_steps <= t.warmup_steps) return t.min_lr;
  const double progress = static_cast<double>(step - t.warmup_steps) / (t.max_steps - t.warmup_steps);
  const double coeff = 0.5 * (1.0 + std::cos(M_PI * std::clamp(progress, 0.0, 1.0)));
  return t.min_lr + coeff * (t.lr - t.min_lr);
}

std::string schedule_warning(const TrainConfig& t) {
  if (t.max_steps <= 0 || t.warmup_steps < t.max_steps) return "";
  return fmt::format(
      "train.warmup_steps {} is not below train.max_steps {}: the learning rate climbs for the whole run, ends at "
      "{:.1e} of train.lr {:.1e}, and never decays; for a short run set a shorter warmup "
      "(--set train.warmup_steps={})",
      t.warmup_steps, t.max_steps, lr_at(t.max_steps - 1, t), t.lr,
      std::min(t.max_steps - 1, std::max(1, t.max_steps / 10)));
}

}  // namespace poslab
