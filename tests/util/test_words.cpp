// util/plural.h and util/shell.h: the words of poslab's messages.
#include <gtest/gtest.h>

#include "util/plural.h"
#include "util/shell.h"
#include "util/wrap.h"

namespace poslab {
namespace {

TEST(Words, ACountTakesItsNounsPluralUnlessOne) {
  EXPECT_EQ(counted(1, "file"), "1 file");
  EXPECT_EQ(counted(0, "file"), "0 files");
  EXPECT_EQ(counted(27, "snapshot table"), "27 snapshot tables");
  EXPECT_EQ(counted(2, "axis", "axes"), "2 axes");
  EXPECT_EQ(counted(1, "axis", "axes"), "1 axis");
}

// What the shell reads back as the same one word: plain paths as they are, anything else in single quotes.
TEST(Words, APathPrintedForTheShellIsOneWord) {
  EXPECT_EQ(shell_word("runs/default/checkpoints/latest.pt"), "runs/default/checkpoints/latest.pt");
  EXPECT_EQ(shell_word("/tmp/a-b_c.d:e=f,g+h@i%j"), "/tmp/a-b_c.d:e=f,g+h@i%j");
  EXPECT_EQ(shell_word("sp ace/rün 1"), "'sp ace/rün 1'");
  EXPECT_EQ(shell_word("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_word("$HOME;rm"), "'$HOME;rm'");
  EXPECT_EQ(shell_word(""), "''");
}

// The help's wrapping: lines of at most `width` columns from column `indent`, broken at spaces.
TEST(Words, TextWrapsAtSpacesToTheWidthFromItsIndent) {
  EXPECT_EQ(wrap_text("one two three four", 9), "one two\nthree\nfour");
  EXPECT_EQ(wrap_text("one two three four", 13), "one two three\nfour");
  // From column 4: 5 columns a line; each next line starts after 4 spaces.
  EXPECT_EQ(wrap_text("one two three", 9, 4), "one\n    two\n    three");
  EXPECT_EQ(wrap_text("short", 80, 28), "short");
  EXPECT_EQ(wrap_text("", 10), "");
}

TEST(Words, AWordLongerThanALineStandsAlone) {
  EXPECT_EQ(wrap_text("a RUN_DIR/checkpoints/latest.pt b", 10), "a\nRUN_DIR/checkpoints/latest.pt\nb");
}

TEST(Words, NewlinesStartLinesAndInnerSpacesStay) {
  EXPECT_EQ(wrap_text("first line\nsecond", 80, 2), "first line\n  second");
  EXPECT_EQ(wrap_text("a  b", 80), "a  b");
  EXPECT_EQ(wrap_text("ends with a newline\n", 80), "ends with a newline\n");
  EXPECT_EQ(wrap_text("trailing   ", 80), "trailing");
}

// "−", "×" and "…" are two or three bytes and one column each: a line of them is not broken early.
TEST(Words, WidthCountsColumnsNotBytes) {
  EXPECT_EQ(display_width("S … S + length − 1"), 18u);
  EXPECT_EQ(wrap_text("a × b − c", 9), "a × b − c");
  EXPECT_EQ(wrap_text("a × b − c", 8), "a × b −\nc");
}

}  // namespace
}  // namespace poslab
