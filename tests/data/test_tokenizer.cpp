#include <gtest/gtest.h>
#include <spdlog/fmt/fmt.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <set>

#include "config/config.h"
#include "data/batches.h"
#include "data/dataset.h"
#include "data/tokenizer.h"
#include "test_util.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"

namespace poslab {
namespace {

using test::CapturedLog;
using test::TempDir;
using test::write_text;

Config tokenizer_config(const TempDir& dir, const std::string& type, int vocab) {
  Config c = load_config("", {"data.tokenizer.type=" + type, "data.tokenizer.vocab_size=" + std::to_string(vocab),
                              "model.block_size=16", "data.val_fraction=0.1"});
  c.data.corpus = {dir / "corpus.txt"};
  c.data.cache_dir = dir / "cache";
  return c;
}

// The platform trap: sentencepiece (own protobuf 3.14) and LibTorch (protobuf 3.21) in one process.
TEST(Tokenizer, TrainsEncodesAndDecodesInTheSameProcessAsLibTorch) {
  auto t = torch::randn({4, 4}).matmul(torch::randn({4, 4}));  // LibTorch is loaded and used
  ASSERT_EQ(t.size(0), 4);
  TempDir dir;
  write_text(dir / "corpus.txt", test::generated_corpus(400));
  const std::string model = Tokenizer::train(dir / "corpus.txt", dir / "m", "bpe", 300, 1);
  const Tokenizer tok = Tokenizer::from_bytes(model, "m.model");
  EXPECT_EQ(tok.vocab_size(), 300);  // 256 byte pieces, <unk>, the newline piece and 42 more
  ASSERT_GE(tok.newline_id(), 0);
  const std::string text = "the cat sat on the mat.\na bird ran to the river.\n\n";
  const auto ids = tok.encode(text);
  EXPECT_LT(ids.size(), text.size());  // BPE merges characters
  EXPECT_EQ(tok.decode(ids), text);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok.newline_id()), 3);
  EXPECT_FALSE(std::filesystem::exists(dir / "m.model"));  // work files are cleaned up
}

// A model without the newline piece (one loaded from elsewhere) reads a newline as a space: "ab\ncd" encodes as
// "ab cd" does, and decodes to it. The piece renamed in a trained model's bytes to U+2425, a symbol of the same
// length, leaves a valid model without it.
TEST(Tokenizer, AModelWithoutTheNewlinePieceReadsNewlinesAsSpaces) {
  TempDir dir;
  write_text(dir / "corpus.txt", test::generated_corpus(400));
  std::string model = Tokenizer::train(dir / "corpus.txt", dir / "m", "bpe", 300, 1);
  int renamed = 0;
  for (size_t at = model.find(kNewlinePiece); at != std::string::npos; at = model.find(kNewlinePiece, at + 3)) {
    model[at + 2] = '\xA5';  // "\xE2\x90\xA4" (U+2424) -> "\xE2\x90\xA5" (U+2425)
    ++renamed;
  }
  ASSERT_GT(renamed, 0);
  const Tokenizer tok = Tokenizer::from_bytes(model, "renamed.model");
  ASSERT_LT(tok.newline_id(), 0);
  EXPECT_EQ(tok.encode("ab\ncd"), tok.encode("ab cd"));
  EXPECT_EQ(tok.decode(tok.encode("the cat\nsat on the mat.")), "the cat sat on the mat.");
}

TEST(Tokenizer, UnigramModelRoundTrips) {
  TempDir dir;
  write_text(dir / "corpus.txt", test::generated_corpus(400));
  const Tokenizer tok = Tokenizer::from_bytes(Tokenizer::train(dir / "corpus.txt", dir / "u", "unigram", 290, 1), "u");
  const std::string text = "my friend dreamed of a small house.\n";
  EXPECT_EQ(tok.decode(tok.encode(text)), text);
}

// sentencepiece 0.1.97 dies training a unigram model of a corpus of one character (a failed CHECK): the training's
// child process ends, and the error says what to do; the process goes on.
TEST(Tokenizer, ATrainingSentencepieceDiesInIsAnError) {
  TempDir dir;
  write_text(dir / "one.txt", std::string(48, 'a') + "\n");
  std::string e, hint;
  try {
    Tokenizer::train(dir / "one.txt", dir / "u", "unigram", 300, 1);
  } catch (const Error& x) {
    e = x.what();
    hint = x.hint();
  }
  // Reaching this line is the test: Debian 12's sentencepiece dies there (the error below); a later one returns its
  // error, which names the tokenizer as well.
  EXPECT_EQ(e.rfind("training the unigram tokenizer", 0), 0u) << e;
  EXPECT_NE(hint.find("data.tokenizer"), std::string::npos) << hint;
  // A training sentencepiece refuses is said as before: too many pieces for a BPE model of that text.
  const std::string bpe = test::error_of([&] { Tokenizer::train(dir / "one.txt", dir / "b", "bpe", 300, 1); });
  EXPECT_NE(bpe.find("more pieces than a bpe tokenizer finds in the corpus"), std::string::npos) << bpe;
}

// Text a tokenizer must give back byte for byte: tabs, runs of spaces, leading and trailing spaces, carriage
// returns, control characters, empty lines, Latin, Cyrillic, CJK and emoji.
std::string awkward_text() {
  return "\tindented\twith tabs\t\n"
         "  two leading spaces, a run of     five, and trailing   \n"
         "\n\n"
         "bell\x07 escape\x1b[0m backspace\x08 unit-separator\x1f del\x7f\r\n"
         "Съешь же ещё этих мягких французских булок.\n"
         "色は匂へど 散りぬるを\t🙂 👍🏽\n"
         "--\t\tThe Fortune File, 1987\n";
}

// decode(encode(x)) = x for a whole corpus of awkward text, for every tokenizer type, through prepare_tokens (the
// path training takes: cache, wrapping, encoding) and directly.
TEST(Tokenizer, EveryByteOfTheCorpusSurvivesTheRoundTrip) {
  for (const std::string type : {"bpe", "unigram", "char"}) {
    SCOPED_TRACE(type);
    TempDir dir;
    std::string corpus;
    for (int i = 0; i < 40; ++i) corpus += awkward_text() + test::generated_corpus(5, static_cast<unsigned>(i));
    write_text(dir / "corpus.txt", corpus);
    Config c = tokenizer_config(dir, type, type == "unigram" ? 350 : 400);  // unigram finds fewer pieces in this corpus
    const TokenData data = prepare_tokens(c, 1);
    std::vector<int> all(data.train.begin(), data.train.end());
    all.insert(all.end(), data.val.begin(), data.val.end());
    const std::string back = data.tokenizer.decode(all);
    EXPECT_TRUE(back == corpus) << "first difference at byte "
                                << std::mismatch(back.begin(), back.end(), corpus.begin(), corpus.end()).first -
                                       back.begin();
    EXPECT_EQ(data.tokenizer.decode(data.tokenizer.encode(awkward_text())), awkward_text());
  }
}

// Every type falls back to UTF-8 bytes for characters it never saw, so any prompt round-trips.
TEST(Tokenizer, UnseenCharactersFallBackToBytes) {
  for (const std::string type : {"bpe", "unigram", "char"}) {
    SCOPED_TRACE(type);
    TempDir dir;
    write_text(dir / "corpus.txt", test::generated_corpus(400));
    const Tokenizer tok = Tokenizer::from_bytes(Tokenizer::train(dir / "corpus.txt", dir / "t", type, 290, 1), "t");
    const std::string unseen = "Größe ∑ 🙂\tQ\x01Z";
    const std::vector<int> ids = tok.encode(unseen);
    EXPECT_EQ(tok.decode(ids), unseen);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 0), 0) << "no <unk> (id 0)";
  }
}

TEST(Tokenizer, CharVocabularyIsTheCorpusCharacters) {
  TempDir dir;
  write_text(dir / "corpus.txt", "abc abc\ncab\tc\n");
  Config c = tokenizer_config(dir, "char", 5000);  // vocab_size is ignored for char
  c.model.block_size = 2;
  c.data.val_fraction = 0.4;
  const TokenData data = prepare_tokens(c, 1);
  // a, b, c, space + unk + newline piece + 256 byte pieces; no piece of the tab, which is the byte piece <0x09>
  EXPECT_EQ(data.tokenizer.vocab_size(), 262);
  const auto ids = data.tokenizer.encode("abc\ncab\t");
  EXPECT_EQ(ids.size(), 8u);
  EXPECT_EQ(data.tokenizer.decode(ids), "abc\ncab\t");
  // The second run takes the cached tokenizer (a corpus with a tab once counted one piece too many: "damaged").
  EXPECT_TRUE(prepare_tokens(c, 1).tokenizer_from_cache);
  // So with ▁ (sentencepiece's space: one piece with ' ') and ␤ (the newline piece), as poslab's docs hold.
  write_text(dir / "corpus.txt",
             "abc \xE2\x96\x81"
             "abc\n\xE2\x90\xA4"
             "cab\n");
  EXPECT_EQ(prepare_tokens(c, 1).tokenizer.vocab_size(), 262);
  EXPECT_TRUE(prepare_tokens(c, 1).tokenizer_from_cache);
}

TEST(Tokenizer, SecondRunNeitherRetrainsNorReencodes) {
  TempDir dir;
  write_text(dir / "corpus.txt", test::generated_corpus(300));
  const Config c = tokenizer_config(dir, "bpe", 300);
  const TokenData first = prepare_tokens(c, 1);
  EXPECT_FALSE(first.tokenizer_from_cache);
  EXPECT_FALSE(first.tokens_from_cache);
  const TokenData second = prepare_tokens(c, 1);
  EXPECT_TRUE(second.tokenizer_from_cache);
  EXPECT_TRUE(second.tokens_from_cache);
  EXPECT_EQ(first.train, second.train);
  EXPECT_EQ(first.val, second.val);
  EXPECT_EQ(first.tokenizer.model_bytes(), second.tokenizer.model_bytes());

  // The cache key names the training recipe: a tokenizer cached by a poslab that trained it otherwise (before byte
  // fallback, "tokenizer-bpe-300-HASH.model") is never picked up.
  int cached = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "cache")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("tokenizer-", 0) != 0) continue;
    ++cached;
    EXPECT_EQ(name.rfind("tokenizer-r" + std::to_string(kTokenizerRecipe) + "-bpe-300-", 0), 0u) << name;
  }
  EXPECT_EQ(cached, 1);

  // Another vocabulary size or another corpus is another cache entry.
  const TokenData other = prepare_tokens(tokenizer_config(dir, "bpe", 290), 1);
  EXPECT_FALSE(other.tokenizer_from_cache);
  write_text(dir / "corpus.txt", test::generated_corpus(300, /*seed=*/99));
  EXPECT_FALSE(prepare_tokens(c, 1).tokenizer_from_cache);
}

// A training killed before it took its files away (its copy of the corpus, the model it wrote) left them in the cache:
// the next training on this machine takes away those of processes that are gone, and no other machine's or live one's.
TEST(Tokenizer, ATrainingTakesAwayTheFilesOfTrainingsThatWereKilled) {
  TempDir dir;
  write_text(dir / "corpus.txt", test::generated_corpus(300));
  const std::string host = host_name();
  const pid_t dead = test::dead_pid();
  const std::string gone = "train-" + host + "-" + std::to_string(dead);
  const std::vector<std::string> left = {gone + "/corpus.txt", gone + ".txt",
                                         gone + ".txt.tmp." + std::to_string(dead)};
  std::filesystem::create_directories(dir / ("cache/" + gone));
  const std::vector<std::string> kept = {"train-otherhost-" + std::to_string(dead) + ".txt",
                                         "train-" + host + "-" + std::to_string(::getppid()) + ".txt", "notes.txt"};
  std::filesystem::create_directories(dir / "cache");
  for (const std::string& f : left) write_text(dir / ("cache/" + f), "the corpus\n");
  for (const std::string& f : kept) write_text(dir / ("cache/" + f), "the corpus\n");
  CapturedLog log;
  EXPECT_FALSE(prepare_tokens(tokenizer_config(dir, "bpe", 300), 1).tokenizer_from_cache);
  for (const std::string& f : left) EXPECT_FALSE(std::filesystem::exists(dir / ("cache/" + f))) << f;
  EXPECT_FALSE(std::filesystem::exists(dir / ("cache/" + gone)));
  for (const std::string& f : kept) EXPECT_TRUE(std::filesystem::exists(dir / ("cache/" + f))) << f;
  EXPECT_NE(log.str().find("tokenizer: removed what a stopped training left in " + (dir / "cache") + ": "),
            std::string::npos)
      << log.str();
  EXPECT_NE(log.str().find(gone + ".txt.tmp."), std::string::npos) << log.str();
  std::set<std::string> in_cache;  // the training's own folder went too: the model, the tokens and the others
  for (const auto& e : std::filesystem::directory_iterator(dir / "cache"))
    if (e.path().filename().string().rfind("train-", 0) == 0) in_cache.insert(e.path().filename().string());
  EXPECT_EQ(in_cache, std::set<std::string>(kept.begin(), kept.end() - 1));
}

// A tokenizer trained again from a cold cache, elsewhere, is the same model byte for byte (sentencepiece records
// the paths it trained with: they are relative, in a training folder of their own), and so is its token cache's key.
TEST(Tokenizer, ATokenizerTrainedInTwoCachesIsTheSameModel) {
  TempDir dir;
  write_text(dir / "corpus.txt", test::generated_corpus(300));
  Config a = tokenizer_config(dir, "bpe", 300), b = a;
  b.data.cache_dir = dir / "elsewhere/cache";
  const TokenData first = prepare_tokens(a, 1), second = prepare_tokens(b, 1);
  EXPECT_FALSE(second.tokenizer_from_cache);
  EXPECT_EQ(first.tokenizer.model_bytes(), second.tokenizer.model_bytes());
  EXPECT_EQ(std::filesystem::path(first.tokens_path).filename(), std::filesystem::path(second.tokens_path).filename());
}

TEST(Tokenizer, ADamagedCachedModelIsAnErrorNamingItAndTheFix) {
  TempDir dir;
  write_text(dir / "corpus.txt", test::generated_corpus(300));
  const Config c = tokenizer_config(dir, "bpe", 300);
  const TokenData first = prepare_tokens(c, 1);
  std::string cached;
  for (const auto& e : std::filesystem::directory_iterator(dir / "cache"))
    if (e.path().filename().string().rfind("tokenizer-", 0) == 0) cached = e.path().string();
  ASSERT_FALSE(cached.empty());
  const std::string bytes = first.tokenizer.model_bytes();
  // Cut short (a killed writer without the atomic rename, a full disk), overwritten in the middle, and cut at the
  // end of a record (sentencepiece reads that one as a model of 2 pieces).
  const std::vector<std::string> damaged_copies = {bytes.substr(0, bytes.size() / 3),
                                                   bytes.substr(0, 40) + std::string(64, '\xff'), bytes.substr(0, 30)};
  for (const std::string& damaged : damaged_copies) {
    write_text(cached, damaged);
    try {
      prepare_tokens(c, 1);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(cached), std::string::npos) << e.what();
      EXPECT_NE(e.hint().find("rm " + cached), std::string::npos) << e.hint();
    }
  }
  // Deleted as the hint says: trained again, to the same model.
  std::filesystem::remove(cached);
  const TokenData again = prepare_tokens(c, 1);
  EXPECT_FALSE(again.tokenizer_from_cache);
  EXPECT_EQ(again.tokenizer.model_bytes(), bytes);
}

// A token cache of the right size holding an id the tokenizer does not have (overwritten in place, or written by
// another tokenizer under a colliding name) is encoded again, as a cut-short one is: the model never sees the id.
TEST(Tokenizer, ACachedTokenFileWithAnIdOutsideTheVocabularyIsEncodedAgain) {
  TempDir dir;
  write_text(dir / "corpus.txt", test::generated_corpus(300));
  const Config c = tokenizer_config(dir, "bpe", 300);
  const TokenData first = prepare_tokens(c, 1);
  std::string bytes = read_file(first.tokens_path);
  const int32_t outside = first.tokenizer.vocab_size();
  const size_t last_id = bytes.size() - 4 - sizeof outside;  // the last id (the CRC after it)
  std::memcpy(&bytes[last_id], &outside, sizeof outside);
  // its CRC-32 written again to match (as the other tokenizer's file would), so the id itself is what is caught
  const size_t ids_at = 8 + 8;  // after the magic and the count
  const uint32_t crc = static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(bytes.data() + ids_at), static_cast<uInt>(last_id + 4 - ids_at)));
  std::memcpy(&bytes[bytes.size() - 4], &crc, sizeof crc);
  write_text(first.tokens_path, bytes);
  CapturedLog log;
  const TokenData again = prepare_tokens(c, 1);
  EXPECT_FALSE(again.tokens_from_cache);
  const size_t n_ids = (last_id - ids_at) / 4 + 1;
  EXPECT_NE(log.str().find(fmt::format("is damaged (id {} at {}, outside the tokenizer's {} pieces); encoding the "
                                       "corpus again",
                                       outside, n_ids - 1, outside)),
            std::string::npos)
      << log.str();
  EXPECT_EQ(again.train, first.train);
  EXPECT_EQ(again.val, first.val);
  EXPECT_TRUE(prepare_tokens(c, 1).tokens_from_cache) << "written again, whole";
  // the same id with the CRC-32 left as it was: the checksum finds it first
  bytes = read_file(first.tokens_path);
  std::memcpy(&bytes[last_id], &outside, sizeof outside);
  write_text(first.tokens_path, bytes);
  EXPECT_FALSE(prepare_tokens(c, 1).tokens_from_cache);
  EXPECT_NE(
      log.str().find("is damaged (its ids do not match their CRC-32: changed on disk); encoding the corpus again"),
      std::string::npos)
      << log.str();
  // an id changed to another the tokenizer has: only the checksum tells (the val loss would measure other text)
  bytes = read_file(first.tokens_path);
  const size_t last = bytes.size() - 8;
  bytes[last] = static_cast<char>(bytes[last] == 5 ? 6 : 5);
  write_text(first.tokens_path, bytes);
  const TokenData changed = prepare_tokens(c, 1);
  EXPECT_FALSE(changed.tokens_from_cache);
  EXPECT_EQ(changed.val, first.val);
  // a file cut short is said too; one written before the checksum (its own magic) is out of date, not damaged
  write_text(first.tokens_path, read_file(first.tokens_path).substr(0, 30));
  const TokenData cut = prepare_tokens(c, 1);
  EXPECT_FALSE(cut.tokens_from_cache);
  EXPECT_NE(log.str().find("cut short or overwritten); encoding the corpus again"), std::string::npos) << log.str();
  bytes = read_file(first.tokens_path);
  bytes[7] = '1';
  write_text(first.tokens_path, bytes.substr(0, bytes.size() - 4));
  EXPECT_FALSE(prepare_tokens(c, 1).tokens_from_cache);
  EXPECT_NE(log.str().find("was written by an older poslab (no checksum); encoding the corpus again"),
            std::string::npos)
      << log.str();

  // A count damaged so that count × 4 wraps past 2^64 to the file's size (2^62 ids in no bytes): encoded again too.
  const uint64_t wraps = uint64_t(1) << 62;
  write_text(first.tokens_path, read_file(first.tokens_path).substr(0, 8) +
                                    std::string(reinterpret_cast<const char*>(&wraps), sizeof wraps));
  const TokenData third = prepare_tokens(c, 1);
  EXPECT_FALSE(third.tokens_from_cache);
  EXPECT_EQ(third.train, first.train);
}

TEST(Tokenizer, ExistingModelFileIsUsedAsIs) {
  TempDir dir;
  write_text(dir / "corpus.txt", test::generated_corpus(300));
  const std::string bytes = Tokenizer::train(dir / "corpus.txt", dir / "own", "bpe", 300, 1);
  write_text(dir / "own.model", bytes);
  Config c = tokenizer_config(dir, "bpe", 500);
  c.data.tokenizer.model = dir / "own.model";
  const TokenData data = prepare_tokens(c, 1);
  EXPECT_EQ(data.tokenizer.model_bytes(), bytes);
  EXPECT_EQ(data.tokenizer.vocab_size(), 300);
}

TEST(Tokenizer, TrainTokensSplitAndErrors) {
  TempDir dir;
  write_text(dir / "corpus.txt", test::generated_corpus(300));
  const TokenData data = prepare_tokens(tokenizer_config(dir, "char", 0), 1);
  const double total = static_cast<double>(data.train.size() + data.val.size());
  EXPECT_NEAR(data.val.size() / total, 0.1, 1e-3);

  // Garbage model bytes: a clear error naming the source.
  try {
    Tokenizer::from_bytes("not a model", "garbage.model");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("garbage.model"), std::string::npos) << e.what();
  }
  // A vocabulary larger than the corpus allows, and one too small for its pieces: sentencepiece's findings in the
  // config's words (its source file and condition left out), with the size that would do.
  write_text(dir / "small.txt", "tiny corpus\n");
  Config c = tokenizer_config(dir, "bpe", 5000);
  c.data.corpus = {dir / "small.txt"};
  c.origin["data.tokenizer.vocab_size"] = "small.yaml";
  const auto error_of = [&] {
    try {
      prepare_tokens(c, 1);
    } catch (const Error& e) {
      return std::string(e.what()) + "\nhint: " + e.hint();
    }
    return std::string("no error");
  };
  std::string msg = error_of();
  EXPECT_NE(msg.find("small.yaml: training the bpe tokenizer: data.tokenizer.vocab_size = 5000 is more pieces than "
                     "a bpe tokenizer finds in the corpus ("),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find(" or less"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(".cc("), std::string::npos) << msg;
  c.data.tokenizer.vocab_size = 100;
  msg = error_of();
  // 256 byte pieces, <unk>, the newline piece and the 11 distinct characters of "tiny corpus" (its space one)
  EXPECT_NE(msg.find("data.tokenizer.vocab_size = 100 is below the 269 pieces the corpus needs"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("hint: set data.tokenizer.vocab_size to 269 or more"), std::string::npos) << msg;
  // A size nobody set (poslab's default) is named without a "default:" prefix, which read as configs/default.yaml.
  c.origin.erase("data.tokenizer.vocab_size");
  EXPECT_EQ(error_of().rfind("training the bpe tokenizer: data.tokenizer.vocab_size = 100 is below", 0), 0u)
      << error_of();
  // data.tokenizer.model naming a folder or a file that is not a model.
  c.data.tokenizer.model = dir.str();
  c.origin["data.tokenizer.model"] = "own.yaml";
  EXPECT_NE(error_of().find("own.yaml: data.tokenizer.model = " + dir.str() + ": a folder, not a sentencepiece model"),
            std::string::npos)
      << error_of();
  c.data.tokenizer.model = dir / "small.txt";
  EXPECT_NE(error_of().find("data.tokenizer.model = " + dir / "small.txt" +
                            ": not a sentencepiece model (it does not parse as one)"),
            std::string::npos)
      << error_of();
}

TEST(Tokenizer, VeryLongLinesAndACorpusSmallerThanABatch) {
  TempDir dir;
  // One 200,000-character line (sentencepiece's trainer skips lines over 16 KiB) between short ones: its
  // characters appear nowhere else, so unless it is wrapped for training they would have no pieces of their own.
  std::string text = test::generated_corpus(50);
  for (int i = 0; i < 20000; ++i) text += "abcdefghij";
  text += "\n" + test::generated_corpus(50, 3);
  write_text(dir / "corpus.txt", text);
  const TokenData data = prepare_tokens(tokenizer_config(dir, "bpe", 300), 1);
  std::vector<int> all(data.train.begin(), data.train.end());
  all.insert(all.end(), data.val.begin(), data.val.end());
  EXPECT_TRUE(data.tokenizer.decode(all) == text) << "the whole corpus, long line included, must round-trip";

  // Fewer tokens than one batch (batch 64 x block 16) but more than block_size + 1 per split: windows are
  // drawn with replacement, so training works.
  write_text(dir / "small.txt",
             "a tiny corpus of a few dozen characters, enough for two windows.\nand a val tail line here.\n");
  Config c = tokenizer_config(dir, "char", 0);
  c.data.corpus = {dir / "small.txt"};
  c.data.val_fraction = 0.3;
  const TokenData small = prepare_tokens(c, 1);
  ASSERT_LT(small.train.size(), 64u * 16u);
  BatchSampler sampler(small.train, 64, 16, 1);
  EXPECT_EQ(sampler.next().first.size(0), 64);
}

// A long line is encoded in pieces cut before its spaces: the same ids as the whole line, for each type of model,
// however small the pieces (runs of spaces, a space at a cut, a stretch without one longer than a piece, a character
// outside the vocabulary as byte pieces).
TEST(Tokenizer, ALongLineEncodedInPiecesGivesTheIdsOfTheWholeLine) {
  TempDir dir;
  write_text(dir / "corpus.txt", test::generated_corpus(400));
  std::string line = test::generated_corpus(200);
  std::replace(line.begin(), line.end(), '\n', ' ');
  line +=
      "  two  spaces,   three, a word-without-any-space-for-a-while-longer-than-a-piece \xE6\x97\xA5\xE6\x9C\xAC "
      "caf\xC3\xA9";
  line = line + "\n" + line;  // and across a new line
  // BPE with many merges, and char; unigram's float Viterbi may break a near tie otherwise after a cut: never cut.
  for (const auto& [type, vocab] : {std::pair<const char*, int>{"bpe", 420}, {"char", 290}, {"unigram", 290}}) {
    Tokenizer tok = Tokenizer::from_bytes(Tokenizer::train(dir / "corpus.txt", dir / "m", type, vocab, 1), "m.model");
    EXPECT_EQ(tok.cuts_long_lines(), std::string(type) != "unigram") << type;
    EXPECT_EQ(tok.line_chunk(), 4096u);
    tok.set_line_chunk(0);
    const std::vector<int> whole = tok.encode(line);
    for (size_t chunk : {size_t{1}, size_t{7}, size_t{64}, size_t{1000}}) {
      tok.set_line_chunk(chunk);
      EXPECT_EQ(tok.encode(line), whole) << type << ", pieces of " << chunk << " bytes";
    }
    EXPECT_EQ(tok.decode(whole), line) << type;
  }
}

TEST(Tokenizer, SplitShorterThanBlockIsAnError) {
  std::vector<int32_t> ids(100), train, val;
  std::iota(ids.begin(), ids.end(), 0);
  split_tokens(ids, 0.2, 16, "c.txt", train, val);
  EXPECT_EQ(train, std::vector<int32_t>(ids.begin(), ids.begin() + 80));  // the first 80 train, the last 20 val
  EXPECT_EQ(val, std::vector<int32_t>(ids.begin() + 80, ids.end()));
  auto error = [&](const std::vector<int32_t>& some, double fraction) {
    try {
      split_tokens(some, fraction, 16, "c.txt", train, val);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Each split needs block_size + 1 = 17 tokens (a window and its next token), the val side and the train side.
  EXPECT_EQ(error(ids, 0.1),
            "c.txt: 100 tokens split into 90 train and 10 val tokens; each split needs at least block_size + 1 = 17");
  EXPECT_EQ(error(ids, 0.9),
            "c.txt: 100 tokens split into 10 train and 90 val tokens; each split needs at least block_size + 1 = 17");
  // At the edge: 17 val tokens are enough, 16 are not; so for the train side.
  EXPECT_EQ(error(std::vector<int32_t>(170, 1), 0.1), "no error");
  EXPECT_EQ(val.size(), 17u);
  EXPECT_NE(error(std::vector<int32_t>(160, 1), 0.1), "no error");
  EXPECT_EQ(error(std::vector<int32_t>(34, 1), 0.5), "no error");
  EXPECT_EQ(train.size(), 17u);
  EXPECT_NE(error(std::vector<int32_t>(33, 1), 0.5), "no error");   // 17 train, 16 val
  EXPECT_NE(error(std::vector<int32_t>(160, 1), 0.9), "no error");  // 16 train
}

}  // namespace
}  // namespace poslab
