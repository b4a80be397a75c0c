// Text wrapped to a terminal's width: every command's help, whose descriptions are single long lines, and the
// prose and tables of poslab analyze.
#pragma once

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <iterator>
#include <ostream>
#include <streambuf>
#include <string>

namespace poslab {

// The columns of the terminal on file descriptor `fd`; 80 where it is not a terminal or says none.
inline size_t terminal_columns(int fd) {
  winsize w{};
  if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
  return 80;
}

// The width to write text for on `fd`: its terminal's, from 60 to 100 columns (past 100 lines grow too long to
// read); 80 where it is not a terminal.
inline size_t terminal_width(int fd) { return std::clamp<size_t>(terminal_columns(fd), 60, 100); }

// Columns `s` takes on a terminal: its UTF-8 code points ("−", "×" and "…" take one each).
inline size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Whether `word` is a unit that follows a number ("s", "ms", "MB", "tok/s", "%"), a comma, semicolon, colon or closing
// parenthesis after it aside: a line never breaks between the two.
inline bool is_unit(std::string word) {
  while (!word.empty() && std::string(",;:)").find(word.back()) != std::string::npos) word.pop_back();
  static const char* const kUnits[] = {"s",  "ms", "us",    "µs",      "ns",   "min",  "h",   "%",   "B",
                                       "kB", "KB", "MB",    "GB",      "TB",   "KiB",  "MiB", "GiB", "TiB",
                                       "x",  "×",  "tok/s", "steps/s", "GB/s", "MB/s", "nat", "nats"};
  return std::find(std::begin(kUnits), std::end(kUnits), word) != std::end(kUnits);
}

// `text` as lines of at most `width` columns that start at column `indent`: the first where the caller has put it,
// each next one after `indent` spaces. Lines break at spaces (a word longer than a line stands alone), never between
// a number and its unit ("5.88 s"); each newline of `text` starts a new line too; runs of spaces within a line are
// kept.
inline std::string wrap_text(const std::string& text, size_t width, size_t indent = 0) {
  const std::string pad(indent, ' ');
  std::string out;
  size_t begin = 0;
  while (true) {
    const size_t nl = text.find('\n', begin);
    const std::string paragraph = text.substr(begin, nl == std::string::npos ? std::string::npos : nl - begin);
    // Words with the spaces after them; a line breaks before a word that would pass `width`.
    std::string line;
    size_t used = indent;
    size_t at = 0;
    while (at < paragraph.size()) {
      size_t word_end = paragraph.find(' ', at);
      if (word_end == std::string::npos) word_end = paragraph.size();
      size_t next = paragraph.find_first_not_of(' ', word_end);
      if (next == std::string::npos) next = paragraph.size();
      if (word_end > at && std::isdigit(static_cast<unsigned char>(paragraph[word_end - 1])) &&
          next < paragraph.size()) {  // a number: its unit goes with it
        size_t unit_end = paragraph.find(' ', next);
        if (unit_end == std::string::npos) unit_end = paragraph.size();
        if (is_unit(paragraph.substr(next, unit_end - next))) {
          word_end = unit_end;
          next = paragraph.find_first_not_of(' ', word_end);
          if (next == std::string::npos) next = paragraph.size();
        }
      }
      const std::string word = paragraph.substr(at, word_end - at);
      if (!line.empty() && used + display_width(word) > width) {
        line.erase(line.find_last_not_of(' ') + 1);
        out += line + "\n" + pad;
        line.clear();
        used = indent;
      }
      line += paragraph.substr(at, next - at);
      used += display_width(word) + (next - word_end);
      at = next;
    }
    const size_t last = line.find_last_not_of(' ');
    out += last == std::string::npos ? std::string() : line.substr(0, last + 1);
    if (nl == std::string::npos) return out;
    out += "\n" + pad;
    begin = nl + 1;
  }
}

// One line within `width` columns, its continuation lines starting under byte offset `head` (the text after a label,
// a log line's message): broken between items separated by " | " where it can, else between words.
inline std::string wrap_line_at(const std::string& line, size_t width, size_t head) {
  if (display_width(line) <= width) return line;
  head = std::min(head, line.size());
  std::string out, current = line.substr(0, head);
  const size_t indent = display_width(current);
  const std::string pad(indent, ' ');
  size_t used = indent;
  bool empty = true;  // no item on the current line yet
  const std::string body = line.substr(head);
  for (size_t at = 0; at <= body.size();) {
    size_t end = body.find(" | ", at);
    if (end == std::string::npos) end = body.size();
    const std::string item = body.substr(at, end - at);
    const size_t need = display_width(item) + (empty ? 0 : 3);
    if (!empty && used + need > width) {
      out += current + "\n";
      current = pad;
      used = indent;
      empty = true;
    }
    if (empty && used + display_width(item) > width) {
      const std::string wrapped = wrap_text(item, width, indent);
      const size_t last = wrapped.rfind('\n');
      current += wrapped;
      used = last == std::string::npos ? used + display_width(wrapped) : display_width(wrapped.substr(last + 1));
    } else {
      current += (empty ? "" : " | ") + item;
      used += empty ? display_width(item) : need;
    }
    empty = false;
    at = end + 3;
  }
  return out + current;
}

// Each line of `text` within `width` columns. A line too long continues under its own text: after its label (the
// first run of two spaces or more within it, as "  noise floor   14 components …" continues at column 16), else two
// columns in from its start (in its own column where it is an indented line of items). It breaks between items
// separated by " | " where it can, else between words.
inline std::string wrap_lines(const std::string& text, size_t width) {
  std::string out;
  for (size_t begin = 0; begin < text.size();) {
    size_t nl = text.find('\n', begin);
    const bool newline = nl != std::string::npos;
    if (!newline) nl = text.size();
    const std::string line = text.substr(begin, nl - begin);
    begin = nl + 1;
    if (display_width(line) <= width) {
      out += line + (newline ? "\n" : "");
      continue;
    }
    const size_t lead = line.find_first_not_of(' ');
    if (lead == std::string::npos) {  // spaces only
      out += line + (newline ? "\n" : "");
      continue;
    }
    // Where the text after the label starts (a byte offset): the continuation lines start under it. A line of items
    // without a label, itself indented, continues in its own column (the items line up).
    size_t head = lead > 0 && line.find(" | ", lead) != std::string::npos ? lead : std::min(lead + 2, line.size());
    if (const size_t gap = line.find("  ", lead); gap != std::string::npos) {
      const size_t text_at = line.find_first_not_of(' ', gap);
      if (text_at != std::string::npos && display_width(line.substr(0, text_at)) < width / 2) head = text_at;
    }
    out += wrap_line_at(line, width, head) + (newline ? "\n" : "");
  }
  return out;
}

// An output stream's buffer that writes each line to `dest` through wrap_lines: a command's output at the terminal's
// width, whatever writes it. A last line without a newline is written when the buffer goes. It flushes `dest` only
// when asked (std::flush): a command's output to a pipe goes out in one piece at its end, as std::cout's own does
// (a reader that stops at its first match, `grep -q`, would otherwise close the pipe on the rest).
class WrappedLines : public std::streambuf {
 public:
  WrappedLines(std::ostream& dest, size_t width) : dest_(dest), width_(width) {}
  WrappedLines(const WrappedLines&) = delete;
  WrappedLines& operator=(const WrappedLines&) = delete;
  ~WrappedLines() override {
    if (!line_.empty()) dest_ << wrap_lines(line_, width_);
  }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    xsputn(&ch, 1);
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    line_.append(s, static_cast<size_t>(n));
    const size_t last = line_.rfind('\n');
    if (last != std::string::npos) {
      dest_ << wrap_lines(line_.substr(0, last + 1), width_);
      line_.erase(0, last + 1);
    }
    return n;
  }
  int sync() override {
    dest_.flush();
    return 0;
  }

 private:
  std::ostream& dest_;
  size_t width_;
  std::string line_;
};

}  // namespace poslab
