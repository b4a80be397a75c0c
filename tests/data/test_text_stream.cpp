// Text written as its ids arrive: each piece a beginning of the whole, a character of several byte pieces written
// once whole, and the pieces together decode(ids) exactly.
#include <gtest/gtest.h>

#include "data/text_stream.h"
#include "data/tokenizer.h"
#include "test_util.h"

namespace poslab {
namespace {

using test::TempDir;
using test::write_text;

TEST(TextStream, WritesEachLineAsItsIdsArriveAndTheWholeIsTheDecodedText) {
  TempDir dir;
  write_text(dir / "corpus.txt", test::generated_corpus(200));
  const Tokenizer tok = Tokenizer::from_bytes(Tokenizer::train(dir / "corpus.txt", dir / "m", "char", 290, 1), "m");
  // "日" (3 bytes) and "é" (2) are no characters of the corpus: byte pieces, one id a byte.
  const std::string text = "the cat\nsat \xE6\x97\xA5 caf\xC3\xA9\n\nend";
  const std::vector<int> ids = tok.encode(text);
  std::vector<std::string> writes;
  TextStream stream(tok, [&](const std::string& s) { writes.push_back(s); });
  std::string written;
  auto all = [&] {
    std::string s;
    for (const std::string& w : writes) s += w;
    return s;
  };
  size_t fed = 0;
  auto feed_until = [&](const std::string& prefix) {  // ids until the decoded text so far starts with `prefix`
    while (fed < ids.size() && tok.decode({ids.begin(), ids.begin() + static_cast<long>(fed)}).rfind(prefix, 0) != 0)
      stream.add(ids[fed++]);
  };
  feed_until("the cat\n");
  EXPECT_EQ(all(), "the cat\n") << "the first line is written before the rest is drawn";
  feed_until("the cat\nsat ");
  stream.add(ids[fed++]);  // the first byte of 日: nothing to write yet
  stream.add(ids[fed++]);
  EXPECT_EQ(all(), "the cat\nsat ");
  stream.add(ids[fed++]);  // its last byte
  EXPECT_EQ(all(), "the cat\nsat \xE6\x97\xA5");
  while (fed < ids.size()) stream.add(ids[fed++]);
  stream.finish();
  EXPECT_EQ(all(), text);
  EXPECT_EQ(all(), tok.decode(ids));
  for (const std::string& w : writes) EXPECT_EQ(w.find("\xEF\xBF\xBD"), std::string::npos) << "a half character";

  // A byte piece that never becomes a character: written as the decoder reads it (U+FFFD) once its line is whole.
  const std::vector<int> lone = {tok.encode("\xE6\x97\xA5")[0], tok.encode("a")[0]};
  writes.clear();
  TextStream broken(tok, [&](const std::string& s) { writes.push_back(s); });
  broken.add(lone[0]);
  EXPECT_EQ(all(), "");
  broken.add(lone[1]);
  broken.finish();
  EXPECT_EQ(all(), tok.decode(lone));
  EXPECT_NE(all().find("\xEF\xBF\xBD"), std::string::npos);
  // A line, or the text, that ends on half a character: that half written as decoded when the line ends, not held.
  const int half = tok.encode("\xE6\x97\xA5")[0];
  const std::vector<int> cut = {tok.encode("a")[0], half, tok.newline_id(), tok.encode("b")[0]};
  writes.clear();
  TextStream line_end(tok, [&](const std::string& s) { writes.push_back(s); });
  line_end.add(cut[0]);
  line_end.add(cut[1]);
  EXPECT_EQ(all(), "a") << "the half character waits for the rest of its line";
  line_end.add(cut[2]);
  line_end.add(cut[3]);
  line_end.finish();
  EXPECT_EQ(all(), tok.decode(cut));
  EXPECT_EQ(all(), "a\xEF\xBF\xBD\nb");
  writes.clear();
  TextStream text_end(tok, [&](const std::string& s) { writes.push_back(s); });
  text_end.add(half);
  text_end.finish();
  EXPECT_EQ(all(), tok.decode({half}));
  EXPECT_EQ(all(), "\xEF\xBF\xBD");
}

// A model without the newline piece (one from elsewhere) has one line, new lines read as spaces: written as it
// arrives all the same, and whole as decode(ids).
TEST(TextStream, AModelWithoutTheNewlinePieceWritesOneLine) {
  TempDir dir;
  write_text(dir / "corpus.txt", test::generated_corpus(200));
  std::string model = Tokenizer::train(dir / "corpus.txt", dir / "m", "bpe", 300, 1);
  for (size_t at = model.find(kNewlinePiece); at != std::string::npos; at = model.find(kNewlinePiece, at + 3))
    model[at + 2] = '\xA5';  // U+2424 renamed U+2425: the piece is no newline piece
  const Tokenizer tok = Tokenizer::from_bytes(model, "renamed.model");
  ASSERT_LT(tok.newline_id(), 0);
  const std::vector<int> ids = tok.encode("the cat\nsat on the mat.");
  std::string written;
  size_t writes = 0;
  TextStream stream(tok, [&](const std::string& s) {
    written += s;
    ++writes;
  });
  for (const int id : ids) stream.add(id);
  stream.finish();
  EXPECT_EQ(written, "the cat sat on the mat.");
  EXPECT_EQ(written, tok.decode(ids));
  EXPECT_GT(writes, 1u) << "written as it arrives, not at the end";
}

}  // namespace
}  // namespace poslab
