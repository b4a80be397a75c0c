// A progress bar with ETA on stderr, drawn only when stderr is a terminal.
#pragma once

#include <chrono>
#include <string>

namespace poslab {

class Progress {
 public:
  // draw: false on ranks other than 0; unit: what is counted ("step", "batch")
  Progress(int64_t first_step, int64_t last_step, bool draw = true, std::string unit = "step");
  ~Progress() { clear(); }  // an error thrown past it is not printed on the bar's line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void update(int64_t step);  // redraws at most ~5 times a second

  // The ETA at `step`, drawn at `now`: from the rate since the first draw (whose step also carried step 0's eval
  // and snapshot and the kernel paths' measurement); "?" at the first. What update() shows.
  std::string eta(int64_t step, std::chrono::steady_clock::time_point now);
  void clear();  // erases the bar so that a log line can be printed

  // "1m23s" style duration.
  static std::string format_duration(double seconds);

  // The bar's line for a terminal `columns` wide, without the carriage return: "[####......] 40% step 400/1000 ETA
  // 1m02s" (the unit's word for "step"), the bar as wide as the text leaves room for (30 at most; none below 10), the
  // text cut to fit a terminal narrower than itself (a line that wraps is not erased by the next draw). `eta` is "?"
  // before the first step.
  static std::string line(int64_t step, int64_t first_step, int64_t last_step, const std::string& eta, int columns,
                          const std::string& unit = "step");

 private:
  int64_t first_, last_;
  std::string unit_;
  bool enabled_;
  bool drawn_ = false;
  bool timing_ = false;     // the first draw sets the rate's start
  int64_t start_step_ = 0;  // the step of the first draw
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace poslab
