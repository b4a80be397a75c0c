// A progress bar with ETA on stderr, drawn only when stderr is a terminal.
#pragma once

#include <chrono>
#include <string>

namespace poslab {

class Progress {
 public:
  Progress(int64_t first_step, int64_t last_step, bool draw = true);  // draw: false on ranks other than 0
  void update(int64_t step);                                          // redraws at most ~5 times a second
  void clear();  // erases the bar so that a log line can be printed

  // "1m23s" style duration.
  static std::string format_duration(double seconds);

 private:
  int64_t first_, last_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace poslab
