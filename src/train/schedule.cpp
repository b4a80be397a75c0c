#include "train/schedule.h"

#include <algorithm>
#include <cmath>

#include <spdlog/fmt/fmt.h>

namespace poslab {

double lr_at(int step, const TrainConfig& t) {
  // In double: warmup_steps + 1 in int wraps at 2^31 − 1 (a negative learning rate)
  if (step < t.warmup_steps) return t.lr * (step + 1.0) / (t.warmup_steps + 1.0);
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

std::string resumed_schedule_warning(const TrainConfig& before, const TrainConfig& now, int64_t step) {
  // A new length or warmup lays the schedule anew (a new lr or min_lr is a rate asked for, not a side effect).
  std::string changed;
  if (before.max_steps != now.max_steps)
    changed = fmt::format("train.max_steps {} -> {}", before.max_steps, now.max_steps);
  if (before.warmup_steps != now.warmup_steps)
    changed += fmt::format("{}train.warmup_steps {} -> {}", changed.empty() ? "" : ", ", before.warmup_steps,
                           now.warmup_steps);
  if (changed.empty()) return "";
  TrainConfig then = now;  // the resumed run's rates on the run's own schedule
  then.max_steps = before.max_steps;
  then.warmup_steps = before.warmup_steps;
  const double was = lr_at(static_cast<int>(step), then), goes = lr_at(static_cast<int>(step), now);
  if (std::abs(goes - was) <= 1e-3 * std::max(std::abs(was), std::abs(goes))) return "";
  return fmt::format(
      "the learning rate goes on at {:.1e} at step {}, where the run's schedule had {:.1e}: {} lays the schedule "
      "anew over the whole run, so the rate {} at once",
      goes, step, was, changed, goes > was ? "jumps up" : "drops");
}

}  // namespace poslab
