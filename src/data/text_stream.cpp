#include "data/text_stream.h"

namespace poslab {

void TextStream::show(bool whole) {
  const std::string text = tokenizer_.decode(line_);
  if (text.compare(0, shown_.size(), shown_) != 0) {  // its start decodes otherwise now: the line again, whole
    if (whole) write_("\n" + text);
    return;
  }
  std::string more = text.substr(shown_.size());
  constexpr const char* kPending = "\xEF\xBF\xBD";  // U+FFFD: a character still missing a byte
  while (!whole && more.size() >= 3 && more.compare(more.size() - 3, 3, kPending) == 0) more.resize(more.size() - 3);
  if (more.empty()) return;
  shown_ += more;
  write_(more);
}

void TextStream::add(int id) {
  if (id < 0 || id != tokenizer_.newline_id()) {
    line_.push_back(id);
    show(false);
    return;
  }
  show(true);
  write_("\n");
  line_.clear();
  shown_.clear();
}

void TextStream::finish() {
  show(true);
  line_.clear();
  shown_.clear();
}

}  // namespace poslab
