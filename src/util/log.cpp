#include "util/log.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <utility>

#include "util/wrap.h"

namespace poslab {

namespace {

const char* const kLogEol = "\n";  // spdlog's default end of line, the pattern_formatter's here

bool ends_in_message(const std::string& pattern) {
  return pattern.size() >= 2 && pattern.compare(pattern.size() - 2, 2, "%v") == 0;
}

}  // namespace

TerminalLogFormatter::TerminalLogFormatter(std::string pattern, size_t width)
    : pattern_(std::move(pattern)), width_(width), inner_(pattern_, spdlog::pattern_time_type::local, kLogEol) {}

void TerminalLogFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  inner_.format(msg, dest);  // sets msg's colour range: in the line's head, which wrapping leaves as it is
  // The message is the line's tail when the pattern ends in %v (the end of line after it): its start is known
  const size_t eol = std::char_traits<char>::length(kLogEol);
  if (!ends_in_message(pattern_) || dest.size() < eol + msg.payload.size()) return;
  const size_t head = dest.size() - eol - msg.payload.size();
  // too narrow a terminal for the message beside its head: the terminal's own wrapping reads better
  const size_t width = width_ > 0 ? width_ : terminal_columns(STDERR_FILENO);
  if (width < head + 30) return;
  std::string text(dest.data(), dest.size() - eol);
  dest.clear();
  // Its first line continues under the message; the lines of a message of several (the config's keys) each under
  // their own text.
  const size_t first_end = std::min(text.find('\n', head), text.size());
  std::string wrapped = wrap_line_at(text.substr(0, first_end), width, head);
  if (first_end < text.size()) wrapped += "\n" + wrap_lines(text.substr(first_end + 1), width);
  wrapped += kLogEol;
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
