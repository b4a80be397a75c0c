// util/plural.h and util/shell.h: the words of poslab's messages.
#include <gtest/gtest.h>

#include <sstream>

#include "util/near_words.h"
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

// A tensor name missed: the names there, position tables first and at most 8, and what it is likely a slip of.
TEST(Words, AMissedNameListsAFewNamesPositionsFirst) {
  std::vector<std::string> names;
  for (int i = 0; i < 12; ++i) names.push_back("transformer.h." + std::to_string(i) + ".attn.weight");
  names.push_back("transformer.wpe.weight");
  names.push_back("transformer.wte.weight");
  MissedName m = missed_name("foo", names, "pass one with --tensor");
  EXPECT_EQ(m.names,
            "transformer.wpe.weight, transformer.h.0.attn.weight, transformer.h.1.attn.weight, "
            "transformer.h.2.attn.weight, transformer.h.3.attn.weight, transformer.h.4.attn.weight, "
            "transformer.h.5.attn.weight, transformer.h.6.attn.weight, … and 6 more");
  EXPECT_EQ(m.hint, "pass one with --tensor");
  m = missed_name("transformer.wpe.wieght", names, "pass one with --tensor");
  EXPECT_EQ(m.hint, "did you mean transformer.wpe.weight? pass one with --tensor");
  EXPECT_EQ(missed_name("x", {"wte.weight", "wpe.weight"}, "").names, "wpe.weight, wte.weight");
  EXPECT_EQ(missed_name("x", {}, "").names, "(none)");
  // Llama's layer norms after attention hold "pos" but name no position
  EXPECT_EQ(
      missed_name("x", {"model.layers.0.post_attention_layernorm.weight", "model.embed_positions.weight"}, "").names,
      "model.embed_positions.weight, model.layers.0.post_attention_layernorm.weight");
  EXPECT_EQ(missed_name("wpe.weigth", {"wpe.weight"}, "").hint, "did you mean wpe.weight?");
}

TEST(Words, ACountIsGroupedInThrees) {
  EXPECT_EQ(grouped(0), "0");
  EXPECT_EQ(grouped(999), "999");
  EXPECT_EQ(grouped(1000), "1,000");
  EXPECT_EQ(grouped(1071872), "1,071,872");
  EXPECT_EQ(grouped(-123456), "-123,456");
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
  // a number and its unit stay together, a comma or semicolon after the unit too
  EXPECT_EQ(wrap_text("the steps took 5.88 s; more", 19), "the steps took\n5.88 s; more");
  EXPECT_EQ(wrap_text("a rate of 120 tok/s", 14), "a rate of\n120 tok/s");
  EXPECT_EQ(wrap_text("a count of 5 steps", 12), "a count of 5\nsteps");  // "steps" is a noun, not a unit
  EXPECT_EQ(wrap_text("ends with a newline\n", 80), "ends with a newline\n");
  EXPECT_EQ(wrap_text("trailing   ", 80), "trailing");
}

// "−", "×" and "…" are two or three bytes and one column each: a line of them is not broken early.
TEST(Words, WidthCountsColumnsNotBytes) {
  EXPECT_EQ(display_width("S … S + length − 1"), 18u);
  EXPECT_EQ(wrap_text("a × b − c", 9), "a × b − c");
  EXPECT_EQ(wrap_text("a × b − c", 8), "a × b −\nc");
}

// A line too long continues under its own text: after its label, in its own column for an indented line of items,
// else two columns in; it breaks between " | " items where it can. Lines that fit are left as they are.
TEST(Words, LongLinesContinueUnderTheirText) {
  EXPECT_EQ(wrap_lines("  noise floor   aaaa bbbb | cccc dddd | eeee\n", 40),
            "  noise floor   aaaa bbbb | cccc dddd\n                eeee\n");
  // An item longer than the room left: its words wrapped in the same column.
  EXPECT_EQ(wrap_lines("  noise floor   aaaa bbbb cccc dddd eeee ffff gggg", 40),
            "  noise floor   aaaa bbbb cccc dddd eeee\n                ffff gggg");
  EXPECT_EQ(wrap_lines("                PC1 abcd | PC2 efgh", 30),
            "                PC1 abcd\n                PC2 efgh");
  EXPECT_EQ(wrap_lines("verdict (x): one two three four five", 20), "verdict (x): one two\n  three four five");
  const std::string fits = "short line\n  and another | with items\n\n";
  EXPECT_EQ(wrap_lines(fits, 30), fits);
  // A label of two-byte characters: the continuation starts under the text, counted in columns.
  EXPECT_EQ(wrap_lines("  R² × R²   aaaa bbbb cccc dddd eeee ffff", 30),
            "  R² × R²   aaaa bbbb cccc\n            dddd eeee ffff");
  EXPECT_EQ(wrap_lines(std::string(30, ' '), 20), std::string(30, ' '));
}

// A stream through WrappedLines: lines wrapped as they end, written in pieces or at once; the last, without its
// newline, when the buffer goes.
TEST(Words, WrappedLinesWrapAStreamLineByLine) {
  std::ostringstream dest;
  {
    WrappedLines buffer(dest, 20);
    std::ostream out(&buffer);
    out << "verdict (x): one "
        << "two three four five\nshort\n"
        << 'n' << "o newline";
    EXPECT_EQ(dest.str(), "verdict (x): one two\n  three four five\nshort\n");
  }
  EXPECT_EQ(dest.str(), "verdict (x): one two\n  three four five\nshort\nno newline");
}

}  // namespace
}  // namespace poslab
