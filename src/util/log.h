// poslab's log lines on stderr, "HH:MM:SS level message": on a terminal a line longer than the terminal continues
// under its message, broken between its " | " items where it can (wrap.h wrap_line_at); to a pipe or a file each
// message stays one line, whatever its length, for grep.
#pragma once

#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>

#include <cstddef>
#include <memory>
#include <string>

namespace poslab {

class TerminalLogFormatter final : public spdlog::formatter {
 public:
  // width 0: the columns of the terminal on stderr, read at each line (a resized terminal is followed)
  explicit TerminalLogFormatter(std::string pattern, size_t width = 0);
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;

 private:
  std::string pattern_;
  size_t width_;
  spdlog::pattern_formatter inner_;
};

// The default logger's pattern (spdlog's flags): through TerminalLogFormatter where stderr is a terminal, else as it
// is.
void set_log_pattern(const std::string& pattern);

}  // namespace poslab
