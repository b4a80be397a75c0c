#include "train/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "util/wrap.h"

namespace poslab {

Progress::Progress(int64_t first_step, int64_t last_step, bool draw, std::string unit)
    : first_(first_step),
      last_(last_step),
      unit_(std::move(unit)),
      enabled_(draw && isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

std::string Progress::format_duration(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

std::string Progress::line(int64_t step, int64_t first_step, int64_t last_step, const std::string& eta, int columns,
                           const std::string& unit) {
  const double done = static_cast<double>(step - first_step);
  const double total = static_cast<double>(std::max<int64_t>(1, last_step - first_step));
  char text[128];
  std::snprintf(text, sizeof text, "%3.0f%% %s %lld/%lld ETA %s", 100.0 * done / total, unit.c_str(),
                static_cast<long long>(step), static_cast<long long>(last_step), eta.c_str());
  std::string out = text;
  const int room = columns - 1 - static_cast<int>(out.size()) - 3;  // the last column left empty: no wrap
  const int width = std::min(30, room);
  if (width >= 10) {
    std::string bar(static_cast<size_t>(std::clamp(width * done / total, 0.0, double(width))), '#');
    bar.resize(static_cast<size_t>(width), '.');
    out = "[" + bar + "] " + out;
  } else {
    out.erase(0, out.find_first_not_of(' '));
  }
  const size_t fit = columns > 1 ? static_cast<size_t>(columns - 1) : 0;
  if (out.size() > fit) out.resize(fit);
  return out;
}

void Progress::update(int64_t step) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(200) && step < last_) return;
  last_draw_ = now;
  // Measured at each draw: a window resized mid-run gets lines that fit it.
  std::fprintf(
      stderr, "\r\033[K%s",
      line(step, first_, last_, eta(step, now), static_cast<int>(terminal_columns(STDERR_FILENO)), unit_).c_str());
  std::fflush(stderr);
  drawn_ = true;
}

std::string Progress::eta(int64_t step, std::chrono::steady_clock::time_point now) {
  // The rate since the first draw: counted from the start, the first step's extra work made the first ETA several
  // times the run's length.
  if (!timing_) {
    timing_ = true;
    start_ = now;
    start_step_ = step;
  }
  const double done = static_cast<double>(step - start_step_);
  if (!(done > 0)) return "?";
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  return format_duration(elapsed / done * static_cast<double>(last_ - step));
}

void Progress::clear() {
  if (!enabled_ || !drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace poslab
