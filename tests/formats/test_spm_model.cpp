// sentencepiece's model read without sentencepiece: the pieces, scores and kinds of a model poslab trained, as
// sentencepiece itself reports them through the tokenizer; bytes that are not a model are an error naming the file.
#include <gtest/gtest.h>

#include "data/tokenizer.h"
#include "formats/spm_model.h"
#include "test_util.h"
#include "util/error.h"

namespace poslab {
namespace {

using test::TempDir;
using test::write_text;

TEST(SpmModel, ReadsWhatPoslabTrained) {
  TempDir dir;
  write_text(dir / "corpus.txt", test::generated_corpus(400));
  for (const char* type : {"bpe", "unigram", "char"}) {
    const std::string bytes = Tokenizer::train(dir / "corpus.txt", dir / "m", type, 290, 1);
    const Tokenizer tok = Tokenizer::from_bytes(bytes, "m.model");
    const SpmModel m = read_spm_model(bytes, "m.model");
    EXPECT_STREQ(spm_kind_name(m.kind), type);
    ASSERT_EQ(static_cast<int>(m.pieces.size()), tok.vocab_size()) << type;
    EXPECT_EQ(m.pieces[0].piece, "<unk>");
    EXPECT_EQ(m.pieces[0].type, SpmPiece::Type::unknown);
    const SpmPiece& nl = m.pieces[static_cast<size_t>(tok.newline_id())];
    EXPECT_EQ(nl.piece, kNewlinePiece);
    EXPECT_EQ(nl.type, SpmPiece::Type::user_defined);
    int bytes_seen = 0, normal = 0;
    for (const SpmPiece& p : m.pieces) {
      bytes_seen += p.type == SpmPiece::Type::byte;
      normal += p.type == SpmPiece::Type::normal;
      if (p.type == SpmPiece::Type::byte) {
        EXPECT_EQ(p.piece.rfind("<0x", 0), 0u) << p.piece;
      }
    }
    EXPECT_EQ(bytes_seen, 256) << type;
    EXPECT_EQ(normal + bytes_seen + 2, tok.vocab_size()) << type;
    // Each normal piece encodes to itself ('▁' is a space).
    for (size_t i = 0; i < m.pieces.size(); ++i) {
      if (m.pieces[i].type != SpmPiece::Type::normal) continue;
      std::string text = m.pieces[i].piece;
      for (size_t at; (at = text.find("\xE2\x96\x81")) != std::string::npos;) text.replace(at, 3, " ");
      EXPECT_EQ(tok.encode(text), std::vector<int>{static_cast<int>(i)}) << type << " piece " << m.pieces[i].piece;
    }
    EXPECT_TRUE(m.byte_fallback);
    EXPECT_EQ(m.unk_surface, " \xE2\x81\x87 ");
    EXPECT_EQ(tok.decode({0}), m.unk_surface) << type << ": sentencepiece decodes <unk> to its unk_surface";
    EXPECT_EQ(m.normalizer, "identity");
    EXPECT_FALSE(m.add_dummy_prefix);
    EXPECT_FALSE(m.remove_extra_whitespaces);
    EXPECT_TRUE(m.escape_whitespaces);
    EXPECT_FALSE(m.treat_whitespace_as_suffix);
    if (std::string(type) == "bpe") {  // BPE scores: higher for earlier merges
      EXPECT_GT(m.pieces[260].score, m.pieces[280].score);
    }
  }
}

// A text cut just before its spaces encodes as the whole text only where no piece joins across a space: poslab's own
// BPE and char models; a unigram model (a float Viterbi over the whole line), one without byte fallback, each switch
// of a model from elsewhere that adds, removes or changes text at a cut, or a piece with "▁" inside it, rules it out.
TEST(SpmModel, AModelEncodesApartAtSpacesOnlyWhereNoPieceJoinsAcrossOne) {
  TempDir dir;
  write_text(dir / "corpus.txt", test::generated_corpus(400));
  const SpmModel own = read_spm_model(Tokenizer::train(dir / "corpus.txt", dir / "m", "bpe", 290, 1), "m.model");
  EXPECT_TRUE(encodes_apart_at_spaces(own));
  auto with = [&](auto change) {
    SpmModel m = own;
    change(m);
    return encodes_apart_at_spaces(m);
  };
  EXPECT_FALSE(with([](SpmModel& m) { m.kind = SpmModel::Kind::unigram; }));
  EXPECT_FALSE(with([](SpmModel& m) { m.byte_fallback = false; }));
  EXPECT_TRUE(with([](SpmModel& m) { m.kind = SpmModel::Kind::character; }));
  EXPECT_FALSE(with([](SpmModel& m) { m.add_dummy_prefix = true; }));
  EXPECT_FALSE(with([](SpmModel& m) { m.remove_extra_whitespaces = true; }));
  EXPECT_FALSE(with([](SpmModel& m) { m.escape_whitespaces = false; }));
  EXPECT_FALSE(with([](SpmModel& m) { m.treat_whitespace_as_suffix = true; }));
  EXPECT_FALSE(with([](SpmModel& m) { m.precompiled_charsmap = "\x01\x02"; }));
  EXPECT_FALSE(with([](SpmModel& m) {
    m.pieces.push_back({"\xE2\x96\x81\xE2\x96\x81", 0.0f, SpmPiece::Type::normal});
  })) << "a piece of two spaces";
  EXPECT_FALSE(with([](SpmModel& m) { m.pieces.push_back({"of\xE2\x96\x81the", 0.0f, SpmPiece::Type::normal}); }));
  EXPECT_TRUE(with([](SpmModel& m) { m.pieces.push_back({"\xE2\x96\x81the", 0.0f, SpmPiece::Type::normal}); }));
}

TEST(SpmModel, BytesThatAreNotAModelAreAnErrorNamingTheFile) {
  for (const std::string& bad :
       {std::string(""), std::string("\x0a\x05\x0a\x03", 4), std::string("not a model at all")}) {
    const std::string msg = test::error_of([&] { read_spm_model(bad, "x.model"); });
    EXPECT_NE(msg.find("x.model: not a sentencepiece model"), std::string::npos) << msg;
  }
  // A piece that is not UTF-8 (tokenizer.json could not hold it): pieces { piece: "\xff" }, trainer_spec {}.
  const std::string bad_piece("\x0a\x03\x0a\x01\xff\x12\x00", 7);
  const std::string msg = test::error_of([&] { read_spm_model(bad_piece, "x.model"); });
  EXPECT_NE(msg.find("x.model: piece 0 of the sentencepiece model is not UTF-8 text"), std::string::npos) << msg;
  // An unk_surface (trainer_spec field 44) that is not UTF-8.
  const std::string bad_surface("\x0a\x09\x0a\x05<unk>\x18\x02\x12\x04\xe2\x02\x01\xff", 17);
  const std::string msg2 = test::error_of([&] { read_spm_model(bad_surface, "y.model"); });
  EXPECT_NE(msg2.find("y.model: the sentencepiece model's unk_surface is not UTF-8 text"), std::string::npos) << msg2;
}

// A model from elsewhere may name another surface for <unk> (trainer_spec.unk_surface = 44): it is read.
TEST(SpmModel, ReadsTheUnkSurface) {
  // pieces { piece: "<unk>" type: UNKNOWN } trainer_spec { unk_surface: "?" }
  const std::string bytes("\x0a\x09\x0a\x05<unk>\x18\x02\x12\x04\xe2\x02\x01?", 17);
  const SpmModel m = read_spm_model(bytes, "m.model");
  ASSERT_EQ(m.pieces.size(), 1u);
  EXPECT_EQ(m.pieces[0].type, SpmPiece::Type::unknown);
  EXPECT_EQ(m.unk_surface, "?");
  EXPECT_EQ(read_spm_model(std::string("\x0a\x09\x0a\x05<unk>\x18\x02\x12\x00", 13), "m.model").unk_surface,
            " \xE2\x81\x87 ")
      << "sentencepiece's default where the model names none";
}

}  // namespace
}  // namespace poslab
