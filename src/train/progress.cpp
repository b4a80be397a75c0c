#include "train/progress.h"

#include <unistd.h>

#include <cstdio>

namespace poslab {

Progress::Progress(int64_t first_step, int64_t last_step, bool draw)
    : first_(first_step),
      last_(last_step),
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

void Progress::update(int64_t step) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(200) && step < last_) return;
  last_draw_ = now;
  const double done = static_cast<double>(step - first_);
  const double total = static_cast<double>(std::max<int64_t>(1, last_ - first_));
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double eta = done > 0 ? elapsed / done * (total - done) : 0.0;
  const int width = 30;
  const int filled = static_cast<int>(width * done / total);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(width, '.');
  std::fprintf(stderr, "\r\033[K[%s] %3.0f%% step %lld/%lld ETA %s", bar.c_str(), 100.0 * done / total,
               static_cast<long long>(step), static_cast<long long>(last_),
               done > 0 ? format_duration(eta).c_str() : "?");
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::clear() {
  if (!enabled_ || !drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace poslab
