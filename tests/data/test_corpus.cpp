#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "data/corpus.h"
#include "test_util.h"
#include "util/error.h"

namespace poslab {
namespace {

using test::TempDir;
using test::write_text;

TEST(Corpus, BinaryDetection) {
  EXPECT_FALSE(looks_binary("hello\nworld\n"));
  EXPECT_TRUE(looks_binary(std::string("ab\0cd", 5)));
}

TEST(Corpus, ReadsFoldersRecursivelySortedOnceEach) {
  TempDir dir;
  write_text(dir / "c/b.txt", "second\n");
  write_text(dir / "c/a.txt", "first");  // no final newline: one is added
  write_text(dir / "c/sub/z.txt", "third\n");
  write_text(dir / "c/index.dat", std::string("\x00\x01\x02", 3));
  std::filesystem::create_symlink(dir / "c/a.txt", dir / "c/a.u8");
  const Corpus corpus = read_corpus({dir / "c"});
  EXPECT_EQ(corpus.text, "first\nsecond\nthird\n");
  EXPECT_EQ(corpus.files.size(), 3u);
  ASSERT_EQ(corpus.skipped.size(), 1u);
  EXPECT_NE(corpus.skipped[0].find("index.dat: binary"), std::string::npos) << corpus.skipped[0];
}

TEST(Corpus, InvalidUtf8IsReplacedAndCounted) {
  TempDir dir;
  write_text(dir / "latin1.txt", "caf\xE9 au lait\n");
  const Corpus corpus = read_corpus({dir / "latin1.txt"});
  EXPECT_EQ(corpus.replaced_bytes, 1u);
  ASSERT_EQ(corpus.replaced_in.size(), 1u);  // the file that held it, for the warning
  EXPECT_EQ(corpus.replaced_in[0], dir / "latin1.txt");
  EXPECT_EQ(corpus.text, "caf\xEF\xBF\xBD au lait\n");
}

TEST(Corpus, MissingEmptyWhitespaceAndBinaryOnlyAreErrors) {
  TempDir dir;
  try {
    read_corpus({dir / "nope.txt"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nope.txt"), std::string::npos) << e.what();
  }
  write_text(dir / "empty.txt", "");
  write_text(dir / "blank.txt", "  \n\t\n\n");
  write_text(dir / "bin.dat", std::string("\x7f"
                                          "ELF\0\0",
                                          6));
  for (const std::string name : {"empty.txt", "blank.txt", "bin.dat"}) {
    try {
      read_corpus({dir / name});
      FAIL() << "expected an error for " << name;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no text found"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
  // what was left out, and why
  EXPECT_NE(test::error_of([&] {
              read_corpus({dir / "empty.txt"});
            }).find("no text found (0 text files, 1 skipped (" + dir / "empty.txt" + ": empty))"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { read_corpus({dir / "bin.dat"}); }).find("bin.dat: binary (NUL bytes)"),
            std::string::npos);
  // A pipe with no writer (it read forever) and a device (/dev/zero read until memory ran out): named at once.
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  for (const std::string& path : {dir / "fifo", std::string("/dev/zero")}) {
    try {
      read_corpus({path});
      FAIL() << "expected an error for " << path;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path + ": not a file of text (a pipe, socket or device)"), std::string::npos)
          << e.what();
    }
  }
}

TEST(Corpus, WrapLongLines) {
  EXPECT_EQ(wrap_long_lines("short\nlines\n", 10), "short\nlines\n");
  EXPECT_EQ(wrap_long_lines("aaaa bbbb cccc", 10), "aaaa bbbb\ncccc");  // at the last space
  EXPECT_EQ(wrap_long_lines("abcdefghijkl", 5), "abcde\nfghij\nkl");    // no space: hard cut
  const std::string euro = "\xE2\x82\xAC\xE2\x82\xAC";                  // two 3-byte characters
  EXPECT_EQ(wrap_long_lines(euro, 4), "\xE2\x82\xAC\n\xE2\x82\xAC");    // never inside a character
}

TEST(Corpus, ContentHashIsStableAndSensitive) {
  EXPECT_EQ(content_hash(""), "cbf29ce484222325");   // FNV-1a 64 offset basis
  EXPECT_EQ(content_hash("a"), "af63dc4c8601ec8c");  // published FNV-1a test vector
  EXPECT_NE(content_hash("abc"), content_hash("abd"));
}

}  // namespace
}  // namespace poslab
