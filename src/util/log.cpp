#include "util/log.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "util/wrap.h"

namespace poslab {

TerminalLogFormatter::TerminalLogFormatter(std::string pattern, size_t width)
    : pattern_(std::move(pattern)), width_(width), inner_(pattern_) {}

void TerminalLogFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  spdlog::memory_buf_t line;
  inner_.format(msg, line);  // sets msg's colour range: in the line's head, which wrapping leaves as it is
  std::string text(line.data(), line.size());
  std::string eol;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
    eol.insert(eol.begin(), text.back());
    text.pop_back();
  }
  // The message is the line's tail (the pattern ends in %v): its first line continues under it; the lines of a
  // message of several (the config's keys) each under their own text.
  const size_t width = width_ > 0 ? width_ : terminal_columns(STDERR_FILENO);
  const size_t head = text.size() >= msg.payload.size() ? text.size() - msg.payload.size() : 0;
  const size_t first_end = std::min(text.find('\n', head), text.size());
  std::string wrapped = wrap_line_at(text.substr(0, first_end), width, head);
  if (first_end < text.size()) wrapped += "\n" + wrap_lines(text.substr(first_end + 1), width);
  wrapped += eol;
  dest.append(wrapped.data(), wrapped.data() + wrapped.size());
}

std::unique_ptr<spdlog::formatter> TerminalLogFormatter::clone() const {
  return std::make_unique<TerminalLogFormatter>(pattern_, width_);
}

void set_log_pattern(const std::string& pattern) {
  if (isatty(STDERR_FILENO))
    spdlog::set_formatter(std::make_unique<TerminalLogFormatter>(pattern));
  else
    spdlog::set_pattern(pattern);
}

}  // namespace poslab
