// util/plural.h and util/shell.h: the words of poslab's messages.
#include <gtest/gtest.h>

#include "util/plural.h"
#include "util/shell.h"

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

}  // namespace
}  // namespace poslab
