// Text written as its ids arrive (poslab sample prints each token as it is drawn). The tokenizer decodes lines
// apart, so each line is decoded again with each new id, and what is written of a line is always a beginning of its
// whole text: a character whose byte pieces are not all there yet (U+FFFD for now) waits for them. Written whole,
// the pieces are decode(ids) exactly.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "data/tokenizer.h"

namespace poslab {

class TextStream {
 public:
  TextStream(const Tokenizer& tokenizer, std::function<void(const std::string&)> write)
      : tokenizer_(tokenizer), write_(std::move(write)) {}
  void add(int id);  // writes what the id adds to the text (perhaps nothing yet)
  void finish();     // writes the rest: the last line whole

 private:
  void show(bool whole);
  const Tokenizer& tokenizer_;
  std::function<void(const std::string&)> write_;
  std::vector<int> line_;  // the ids since the last newline piece
  std::string shown_;      // what is written of that line
};

}  // namespace poslab
