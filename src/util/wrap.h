// Text wrapped to a terminal's width: the help of every command, whose descriptions are single long lines.
#pragma once

#include <cstddef>
#include <string>

namespace poslab {

// Columns `s` takes on a terminal: its UTF-8 code points ("−", "×" and "…" take one each).
inline size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// `text` as lines of at most `width` columns that start at column `indent`: the first where the caller has put it,
// each next one after `indent` spaces. Lines break at spaces (a word longer than a line stands alone); each newline
// of `text` starts a new line too; runs of spaces within a line are kept.
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

}  // namespace poslab
