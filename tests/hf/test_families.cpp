// Which tensors of a model are position tables, and which of their rows are positions: known families from their
// config and names (shapes only, no data).
#include <gtest/gtest.h>

#include "hf/families.h"

using namespace poslab;
using Shapes = std::map<std::string, std::vector<int64_t>>;

namespace {

ModelTables find(const std::string& model_type, const Shapes& shapes,
                 nlohmann::json config = nlohmann::json::object()) {
  if (!model_type.empty()) config["model_type"] = model_type;
  return find_position_tables(config, shapes);
}

}  // namespace

TEST(Families, Gpt2TableFromRowZeroWithItsLayerZeroLayout) {
  const auto t = find("gpt2", {{"transformer.wpe.weight", {1024, 768}},
                               {"transformer.wte.weight", {50257, 768}},
                               {"transformer.h.0.attn.c_attn.weight", {768, 2304}}});
  ASSERT_EQ(t.tables.size(), 1u);
  EXPECT_EQ(t.tables[0].tensor, "transformer.wpe.weight");
  EXPECT_EQ(t.tables[0].role, "model");
  EXPECT_EQ(t.tables[0].offset, 0);
  EXPECT_EQ(t.tables[0].positions(), 1024);
  EXPECT_EQ(t.layout, "gpt2");
  EXPECT_EQ(t.prefix, "transformer.");
  // GPT-2's own hub files name the table without the prefix; no config: the family is read from the name.
  const auto bare = find("", {{"wpe.weight", {1024, 768}}});
  EXPECT_EQ(bare.family, "gpt2");
  EXPECT_EQ(bare.tables.at(0).positions(), 1024);
  EXPECT_EQ(bare.layout, "");  // no c_attn: layer 0 cannot be read
}

TEST(Families, OptAndBartLeaveOutTheirTwoOffsetRows) {
  const auto opt = find("opt", {{"model.decoder.embed_positions.weight", {2050, 768}}});
  ASSERT_EQ(opt.tables.size(), 1u);
  EXPECT_EQ(opt.tables[0].offset, 2);
  EXPECT_EQ(opt.tables[0].first_row(), 2);
  EXPECT_EQ(opt.tables[0].positions(), 2048);
  EXPECT_NE(opt.tables[0].skipped.find("offset of 2"), std::string::npos);
  const auto bart = find("bart", {{"model.decoder.embed_positions.weight", {1026, 16}},
                                  {"model.encoder.embed_positions.weight", {1026, 16}}});
  ASSERT_EQ(bart.tables.size(), 2u);
  EXPECT_EQ(bart.tables[0].role, "encoder");  // the encoder first
  EXPECT_EQ(bart.tables[1].role, "decoder");
  for (const auto& s : bart.tables) EXPECT_EQ(s.positions(), 1024);
}

TEST(Families, RobertaFamilyStartsAfterThePaddingRow) {
  for (const char* type : {"roberta", "xlm-roberta", "camembert"}) {
    const auto t = find(type, {{"roberta.embeddings.position_embeddings.weight", {514, 768}}}, {{"pad_token_id", 1}});
    ASSERT_EQ(t.tables.size(), 1u) << type;
    EXPECT_EQ(t.tables[0].offset, 2) << type;
    EXPECT_EQ(t.tables[0].positions(), 512) << type;
    EXPECT_NE(t.tables[0].skipped.find("padding_idx"), std::string::npos);
  }
  // Another pad id moves the first position with it.
  EXPECT_EQ(
      find("roberta", {{"embeddings.position_embeddings.weight", {40, 8}}}, {{"pad_token_id", 3}}).tables[0].offset, 4);
  // pad id 0 too (row 0 is then the padding row); and at the table's edge, a pad row with one row after it
  EXPECT_EQ(
      find("roberta", {{"embeddings.position_embeddings.weight", {40, 8}}}, {{"pad_token_id", 0}}).tables[0].offset, 1);
  const auto edge = find("roberta", {{"embeddings.position_embeddings.weight", {5, 8}}}, {{"pad_token_id", 3}});
  EXPECT_EQ(edge.tables.at(0).offset, 4);
  EXPECT_EQ(edge.tables.at(0).positions(), 1);
  // BERT numbers positions from row 0, and its layout is read when the query map is there.
  const auto bert = find("bert", {{"bert.embeddings.position_embeddings.weight", {512, 768}},
                                  {"bert.embeddings.word_embeddings.weight", {30522, 768}},
                                  {"bert.encoder.layer.0.attention.self.query.weight", {768, 768}}});
  EXPECT_EQ(bert.tables.at(0).offset, 0);
  EXPECT_EQ(bert.layout, "bert");
  EXPECT_EQ(bert.prefix, "bert.");
}

TEST(Families, VisionTablesDropTheClassRowAndFormAGrid) {
  const auto vit =
      find("vit", {{"vit.embeddings.position_embeddings", {1, 197, 768}}}, {{"image_size", 224}, {"patch_size", 16}});
  ASSERT_EQ(vit.tables.size(), 1u);
  EXPECT_EQ(vit.tables[0].class_rows, 1);
  EXPECT_EQ(vit.tables[0].positions(), 196);
  EXPECT_EQ(vit.tables[0].grid_rows, 14);
  EXPECT_EQ(vit.tables[0].grid_cols, 14);
  EXPECT_EQ(vit.tables[0].role, "vision");
  // CLIP: a text table (a sequence) and a vision table (class row + grid), the vision size in vision_config.
  const auto clip = find("clip",
                         {{"text_model.embeddings.position_embedding.weight", {77, 512}},
                          {"vision_model.embeddings.position_embedding.weight", {50, 768}}},
                         {{"vision_config", {{"image_size", 224}, {"patch_size", 32}}}});
  ASSERT_EQ(clip.tables.size(), 2u);
  EXPECT_EQ(clip.tables[0].role, "text");
  EXPECT_EQ(clip.tables[0].positions(), 77);
  EXPECT_EQ(clip.tables[1].role, "vision");
  EXPECT_EQ(clip.tables[1].grid_rows, 7);
  // Patch rows that are no square stay a sequence, and say so.
  const auto odd = find("vit", {{"embeddings.position_embeddings", {1, 13, 8}}});
  EXPECT_EQ(odd.tables.at(0).grid_rows, 0);
  EXPECT_NE(odd.tables[0].skipped.find("not form a square"), std::string::npos);
}

TEST(Families, WhisperEncoderAndSinusoidalDistilbertAreFrozen) {
  const auto w = find("whisper", {{"model.encoder.embed_positions.weight", {1500, 384}},
                                  {"model.decoder.embed_positions.weight", {448, 384}}});
  ASSERT_EQ(w.tables.size(), 2u);
  EXPECT_TRUE(w.tables[0].frozen);   // encoder: a fixed sinusoid
  EXPECT_FALSE(w.tables[1].frozen);  // decoder: learned
  EXPECT_EQ(w.tables[1].offset, 0);
  const auto d = find("distilbert", {{"distilbert.embeddings.position_embeddings.weight", {512, 768}}},
                      {{"sinusoidal_pos_embds", true}});
  EXPECT_TRUE(d.tables.at(0).frozen);
}

// poslab exports every position variant in GPT-2's layout: a sinusoidal run's wpe holds its fixed sinusoid, a run
// without a table holds zeros there. Neither is a learned table.
TEST(Families, PoslabExportsOfSinusoidalAndNoPositionsAreNotLearnedTables) {
  const Shapes gpt2 = {{"transformer.wpe.weight", {128, 32}}, {"transformer.h.0.attn.c_attn.weight", {32, 96}}};
  auto exported = [&](const char* position) {
    return find("gpt2", gpt2, {{"poslab", {{"position", position}, {"step", 3}}}});
  };
  const auto learned = exported("learned");
  ASSERT_EQ(learned.tables.size(), 1u);
  EXPECT_FALSE(learned.tables[0].frozen);
  EXPECT_NE(tables_text(learned).find("; learned"), std::string::npos) << tables_text(learned);
  const auto sinusoidal = exported("sinusoidal");
  ASSERT_EQ(sinusoidal.tables.size(), 1u);
  EXPECT_TRUE(sinusoidal.tables[0].frozen);
  EXPECT_NE(tables_text(sinusoidal).find("fixed sinusoid (not learned)"), std::string::npos);
  const auto none = exported("none");
  EXPECT_TRUE(none.tables.empty());
  EXPECT_FALSE(none.unknown);      // nothing is missing: there is no table to find
  EXPECT_EQ(none.layout, "gpt2");  // layer 0 is there all the same
  EXPECT_NE(tables_text(none).find("no learned position table: poslab's model.position none"), std::string::npos)
      << tables_text(none);
  // Another model's config with a "poslab" key of another shape changes nothing.
  EXPECT_FALSE(find("gpt2", gpt2, {{"poslab", "none"}}).tables.empty());
  EXPECT_FALSE(find("gpt2", gpt2, {{"poslab", {{"position", 0}}}}).tables.at(0).frozen);
}

TEST(Families, ModelsWithoutATableSayWhatTheyUse) {
  const auto llama = find("llama", {{"model.embed_tokens.weight", {32000, 4096}}}, {{"rope_theta", 10000.0}});
  EXPECT_TRUE(llama.tables.empty());
  EXPECT_NE(llama.no_table.find("rotary"), std::string::npos);
  EXPECT_NE(find("bloom", {{"word_embeddings.weight", {10, 4}}}).no_table.find("ALiBi"), std::string::npos);
  EXPECT_NE(
      find("t5", {{"shared.weight", {10, 4}}}, {{"relative_attention_num_buckets", 32}}).no_table.find("relative"),
      std::string::npos);
  EXPECT_NE(find("", {{"x", {3, 4}}}).no_table.find("no position table"), std::string::npos);
  EXPECT_NE(tables_text(llama).find("no learned position table: rotary"), std::string::npos);
  EXPECT_FALSE(llama.unknown);  // a model that has no table: nothing is missing
  EXPECT_TRUE(find("", {{"x", {3, 4}}}).unknown);
}

TEST(Families, AFamilyThatKeepsATableButLacksItIsNamedSo) {
  // One shard of a GPT-2 checkpoint, or a file saved without its table: the table it should hold, by name.
  const auto gpt2 = find("gpt2", {{"transformer.wte.weight", {50257, 768}}, {"transformer.h.0.ln_1.weight", {768}}});
  EXPECT_TRUE(gpt2.tables.empty());
  EXPECT_TRUE(gpt2.unknown);
  EXPECT_EQ(gpt2.lacks, "wpe.weight");
  EXPECT_EQ(find("", {{"x", {3, 4}}}).lacks, "");
  EXPECT_EQ(gpt2.no_table,
            "model_type gpt2 keeps a learned table (wpe.weight), but it is not among the 2 tensors found");
  EXPECT_NE(find("roberta", {{"x", {3, 4}}})
                .no_table.find("(embeddings.position_embeddings.weight), but it is not "
                               "among the 1 tensor found"),
            std::string::npos);
}

TEST(Families, OddConfigsAndShapesNeverThrow) {
  // A model_type that is not a string, a pad id that is not a number or past the table, empty and 1-D shapes.
  const ModelTables odd =
      find_position_tables({{"model_type", 3}, {"pad_token_id", "x"}},
                           {{"embeddings.position_embeddings.weight", {2, 4}}, {"wpe.weight", {5}}, {"", {}}});
  EXPECT_EQ(odd.family, "bert");  // by the table's name; the 1-D and empty shapes are no table
  ASSERT_EQ(odd.tables.size(), 1u);
  EXPECT_EQ(odd.tables[0].tensor, "embeddings.position_embeddings.weight");
  EXPECT_EQ(odd.tables[0].offset, 0);
  EXPECT_EQ(odd.tables[0].positions(), 2);
  const auto t = find("roberta", {{"embeddings.position_embeddings.weight", {2, 4}}}, {{"pad_token_id", 7}});
  EXPECT_EQ(t.tables.at(0).offset, 0);  // the pad row lies past the table: rows as stored, and said so
  EXPECT_EQ(t.tables.at(0).skipped,
            "none, though pad_token_id 7 should name the padding row: it is not a row of this 2-row table, so rows are "
            "read as stored, from position 0 (is config.json this model's?)");
  // A table of the family's name, of another shape: said, not "not among the tensors found".
  EXPECT_EQ(find("gpt2", {{"transformer.wpe.weight", {384}}, {"transformer.wte.weight", {50, 8}}}).no_table,
            "model_type gpt2 keeps a learned table (wpe.weight); transformer.wpe.weight is there, but of shape [384], "
            "not 2-D (positions x dims)");
  EXPECT_NE(find("roberta", {{"embeddings.position_embeddings.weight", {40, 8}}}, {{"pad_token_id", -5}})
                .tables.at(0)
                .skipped.find("pad_token_id -5 should name the padding row"),
            std::string::npos);
  EXPECT_TRUE(find_position_tables(nullptr, {{"wpe.weight", {0, 4}}}).tables.empty());
}
