// tokenizer.json written from a sentencepiece model: the BPE merges its pieces imply, in sentencepiece's order; the
// normaliser and decoder that map the newline piece; the models poslab cannot state refused with the reason.
// transformers reads the real files and compares them with poslab's ids in tests/export/test_export.sh (the pip leg).
#include <gtest/gtest.h>

#include "data/tokenizer.h"
#include "export/hf_tokenizer.h"

namespace poslab {
namespace {

using T = SpmPiece::Type;

SpmModel toy(SpmModel::Kind kind) {
  SpmModel m;
  m.kind = kind;
  m.byte_fallback = true;
  m.normalizer = "identity";
  m.add_dummy_prefix = m.remove_extra_whitespaces = false;
  m.pieces = {{"<unk>", 0, T::unknown},
              {kNewlinePiece, 0, T::user_defined},
              {"<0x0A>", 0, T::byte},
              {"ab", -1, T::normal},
              {"abc", -2, T::normal},
              {"bc", -3, T::normal},
              {"a", -4, T::normal},
              {"b", -5, T::normal},
              {"c", -6, T::normal},
              {"\xC3\xA9"
               "a",
               -1.5f, T::normal},
              {"\xC3\xA9", -7, T::normal}};
  return m;
}

TEST(HfTokenizer, BpeMergesFollowTheMergedPiecesScores) {
  // abc = ab + c = a + bc: both, by the ids of their parts; "éa" split between characters, never inside é.
  using M = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(spm_bpe_merges(toy(SpmModel::Kind::bpe)),
            (M{{"a", "b"}, {"\xC3\xA9", "a"}, {"ab", "c"}, {"a", "bc"}, {"b", "c"}}));
}

TEST(HfTokenizer, TheNewlinePieceIsAnAddedTokenMappedToANewLine) {
  std::string why;
  const auto j = hf_tokenizer_json(toy(SpmModel::Kind::bpe), kNewlinePiece, &why);
  ASSERT_FALSE(j.is_null()) << why;
  ASSERT_EQ(j["added_tokens"].size(), 1u);  // <unk> is not: sentencepiece never reads it from text
  EXPECT_EQ(j["added_tokens"][0]["id"], 1);
  EXPECT_EQ(j["added_tokens"][0]["content"], kNewlinePiece);
  EXPECT_EQ(j["added_tokens"][0]["normalized"], true);
  const auto& n = j["normalizer"]["normalizers"];
  EXPECT_EQ(n[0]["pattern"]["String"], "\n");
  EXPECT_EQ(n[0]["content"], kNewlinePiece);
  EXPECT_EQ(n[1]["content"], "\xE2\x96\x81");
  const auto& d = j["decoder"]["decoders"];
  EXPECT_EQ(d[0]["pattern"]["Regex"], "^<unk>$") << "<unk> as a whole token, before the tokens are joined";
  EXPECT_EQ(d[0]["content"], " \xE2\x81\x87 ");
  EXPECT_EQ(d.back()["pattern"]["String"], kNewlinePiece);
  EXPECT_EQ(d.back()["content"], "\n");
  EXPECT_EQ(j["model"]["type"], "BPE");
  EXPECT_EQ(j["model"]["byte_fallback"], true);
  EXPECT_EQ(j["model"]["vocab"]["abc"], 4);
  EXPECT_EQ(j["model"]["merges"].size(), 5u);
  EXPECT_EQ(j["model"]["merges"][0], nlohmann::ordered_json::array({"a", "b"}));
  // char: BPE without merges (each character its piece); unigram: the pieces with their scores.
  EXPECT_TRUE(hf_tokenizer_json(toy(SpmModel::Kind::character), kNewlinePiece, &why)["model"]["merges"].empty());
  const auto u = hf_tokenizer_json(toy(SpmModel::Kind::unigram), kNewlinePiece, &why)["model"];
  EXPECT_EQ(u["type"], "Unigram");
  EXPECT_EQ(u["unk_id"], 0);
  EXPECT_EQ(u["vocab"][4], nlohmann::ordered_json::array({"abc", -2.0}));
}

TEST(HfTokenizer, UnkDecodesToTheModelsSurfaceItsNameEscaped) {
  SpmModel m = toy(SpmModel::Kind::unigram);
  m.pieces[0].piece = "[UNK]";
  m.unk_surface = "?";
  std::string why;
  const auto d = hf_tokenizer_json(m, kNewlinePiece, &why)["decoder"]["decoders"][0];
  EXPECT_EQ(d["pattern"]["Regex"], "^\\[UNK\\]$");
  EXPECT_EQ(d["content"], "?");
}

TEST(HfTokenizer, ANormaliserItCannotStateIsRefusedWithTheReason) {
  auto refused = [](SpmModel m) {
    std::string why;
    EXPECT_TRUE(hf_tokenizer_json(m, kNewlinePiece, &why).is_null());
    return why;
  };
  SpmModel m = toy(SpmModel::Kind::bpe);
  m.normalizer = "nmt_nfkc";
  EXPECT_EQ(refused(m), "its normalisation rule nmt_nfkc");
  m = toy(SpmModel::Kind::bpe);
  m.add_dummy_prefix = true;
  EXPECT_EQ(refused(m), "its dummy prefix (add_dummy_prefix)");
  m = toy(SpmModel::Kind::word);
  EXPECT_EQ(refused(m), "a word model");
}

}  // namespace
}  // namespace poslab
