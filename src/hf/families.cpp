#include "hf/families.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "util/plural.h"
#include "util/text.h"

namespace poslab {

namespace {

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// An integer field of the config (or of one of its sub-configs), or `fallback`.
int64_t config_int_or(const nlohmann::json& c, const char* key, int64_t fallback) {
  if (c.is_object() && c.contains(key) && c[key].is_number_integer()) return c[key].get<int64_t>();
  return fallback;
}

bool config_true(const nlohmann::json& c, const char* key) {
  return c.is_object() && c.contains(key) && c[key].is_boolean() && c[key].get<bool>();
}

// The position variant of a model poslab exported (config.json's "poslab": {"position": …}), "" for any other model.
std::string poslab_position(const nlohmann::json& c) {
  if (!c.is_object() || !c.contains("poslab") || !c["poslab"].is_object()) return "";
  const nlohmann::json& p = c["poslab"];
  return p.contains("position") && p["position"].is_string() ? p["position"].get<std::string>() : "";
}

// Families whose learned table keeps 2 rows before position 0 (their LearnedPositionalEmbedding's offset).
const std::set<std::string> kOffsetTwo = {"opt", "bart", "mbart", "plbart", "biogpt", "mvp"};
// Families that number positions from padding_idx + 1 (RoBERTa's create_position_ids_from_input_ids).
const std::set<std::string> kFromPadding = {
    "roberta",       "xlm-roberta",          "camembert", "xlm-roberta-xl", "longformer",
    "data2vec-text", "roberta-prelayernorm", "xmod",      "ibert"};
const std::set<std::string> kRotary = {"llama",    "mistral", "mixtral",    "qwen2",    "qwen3", "gemma",
                                       "gemma2",   "phi",     "phi3",       "gpt_neox", "gptj",  "falcon",
                                       "stablelm", "olmo",    "starcoder2", "codegen"};
const std::set<std::string> kAlibi = {"bloom", "mpt"};
// Families that keep a learned table (docs/models.md's list), by the name it has in their files.
const std::map<std::string, std::string> kLearned = {{"gpt2", "wpe.weight"},
                                                     {"gpt_neo", "wpe.weight"},
                                                     {"opt", "embed_positions.weight"},
                                                     {"bart", "embed_positions.weight"},
                                                     {"mbart", "embed_positions.weight"},
                                                     {"plbart", "embed_positions.weight"},
                                                     {"biogpt", "embed_positions.weight"},
                                                     {"mvp", "embed_positions.weight"},
                                                     {"whisper", "embed_positions.weight"},
                                                     {"bert", "embeddings.position_embeddings.weight"},
                                                     {"distilbert", "embeddings.position_embeddings.weight"},
                                                     {"clip", "embeddings.position_embedding.weight"},
                                                     {"siglip", "embeddings.position_embedding.weight"},
                                                     {"vit", "embeddings.position_embeddings"},
                                                     {"deit", "embeddings.position_embeddings"}};

// The patches' grid: a square of side √n (ViT, CLIP and SigLIP take square images; image_size / patch_size, where the
// config gives them, is that side whenever its square is n, so the rows alone decide).
std::string vision_grid(PositionTableSpec& s) {
  const int64_t n = s.rows - s.offset - s.class_rows;
  const int64_t side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(n))));
  if (side * side != n || n < 4) return fmt::format("{} patch rows do not form a square grid: read as a sequence", n);
  s.grid_rows = s.grid_cols = side;
  return "";
}

}  // namespace

ModelTables find_position_tables(const nlohmann::json& config,
                                 const std::map<std::string, std::vector<int64_t>>& shapes) {
  ModelTables t;
  t.family = config.is_object() && config.contains("model_type") && config["model_type"].is_string()
                 ? config["model_type"].get<std::string>()
                 : "";
  const bool offset_two = kOffsetTwo.count(t.family) > 0, from_padding = kFromPadding.count(t.family) > 0;
  const std::string poslab = poslab_position(config);
  for (const auto& [name, shape] : shapes) {
    PositionTableSpec s;
    s.tensor = name;
    s.shape = shape;
    const bool seq = shape.size() == 2, vit = shape.size() == 3 && shape[0] == 1;
    if (!seq && !vit) continue;
    s.rows = shape[shape.size() - 2];
    s.dims = shape.back();
    s.role = contains(name, "encoder.") ? "encoder" : contains(name, "decoder.") ? "decoder" : "model";
    if (ends_with(name, "wpe.weight") && seq) {  // GPT-2, GPT-Neo
      if (t.family.empty()) t.family = "gpt2";
      if (shapes.count(name.substr(0, name.size() - 10) + "h.0.attn.c_attn.weight")) {
        t.layout = "gpt2";
        t.prefix = name.substr(0, name.size() - 10);
      }
      // poslab's export keeps GPT-2's layout whatever its position variant: a sinusoid in wpe, or zeros for none.
      if (poslab == "sinusoidal") s.frozen = true;
      if (poslab == "none") continue;
    } else if (ends_with(name, "embed_positions.weight") && seq) {  // OPT, BART, mBART, Whisper
      if (offset_two) {
        s.offset = 2;
        s.skipped = "rows 0-1: the learned embedding's offset of 2 (the first token's position is row 2)";
      }
      if (t.family == "whisper" && s.role == "encoder") s.frozen = true;
    } else if (ends_with(name, "embeddings.position_embeddings.weight") && seq) {  // BERT, RoBERTa, DistilBERT
      if (t.family.empty()) t.family = "bert";
      if (from_padding) {
        const int64_t pad = config_int_or(config, "pad_token_id", 1);
        if (pad < 0 || pad + 1 >= s.rows)  // said wherever the table is: its rows are read as stored
          s.skipped = fmt::format(
              "none, though pad_token_id {} should name the padding row: it is not a row of this "
              "{}-row table, so rows are read as stored, from position 0 (is config.json this "
              "model's?)",
              pad, s.rows);
        if (pad >= 0 && pad + 1 < s.rows) {
          s.offset = pad + 1;
          s.skipped = fmt::format("rows 0-{}: row {} is padding_idx (pad_token_id), positions start at padding_idx + 1",
                                  pad, pad);
        }
      }
      if (t.family == "distilbert" && config_true(config, "sinusoidal_pos_embds")) s.frozen = true;
      const std::string prefix = name.substr(0, name.size() - 37);
      if (shapes.count(prefix + "encoder.layer.0.attention.self.query.weight") &&
          shapes.count(prefix + "embeddings.word_embeddings.weight")) {
        t.layout = "bert";
        t.prefix = prefix;
      }
    } else if (ends_with(name, "embeddings.position_embeddings") && vit) {  // ViT, DeiT
      s.role = "vision";
      s.class_rows = t.family == "deit" ? 2 : 1;
      s.skipped = s.class_rows == 2 ? "rows 0-1: the class and distillation tokens" : "row 0: the class token";
      if (std::string why = vision_grid(s); !why.empty()) s.skipped += "; " + why;
    } else if (ends_with(name, "embeddings.position_embedding.weight") && seq) {  // CLIP, SigLIP
      if (contains(name, "vision_model.")) {
        s.role = "vision";
        s.class_rows = t.family == "siglip" ? 0 : 1;
        s.skipped = s.class_rows ? "row 0: the class token" : "";
        if (std::string why = vision_grid(s); !why.empty()) s.skipped += (s.skipped.empty() ? "" : "; ") + why;
      } else {
        s.role = "text";
      }
    } else {
      continue;
    }
    if (s.positions() < 1) continue;
    t.tables.push_back(s);
  }
  // Encoder before decoder, text before vision: the order a reader expects.
  std::stable_sort(t.tables.begin(), t.tables.end(), [](const auto& a, const auto& b) {
    auto rank = [](const std::string& r) {
      return r == "model" ? 0 : r == "encoder" ? 1 : r == "decoder" ? 2 : r == "text" ? 3 : 4;
    };
    return rank(a.role) < rank(b.role);
  });
  if (!t.tables.empty()) return t;
  if (poslab == "none")
    t.no_table =
        "poslab's model.position none: no position table was trained (the exported wpe is zeros), only the causal "
        "mask tells a token where it is";
  else if (kRotary.count(t.family) || config.contains("rope_theta") || config.contains("rotary_dim") ||
           config.contains("rotary_pct"))
    t.no_table =
        "rotary position embeddings (RoPE): positions rotate the queries and keys in each layer; no table is stored";
  else if (kAlibi.count(t.family) || config_true(config, "alibi"))
    t.no_table = "ALiBi: a linear bias on the attention scores by distance; no table is stored";
  else if (config.contains("relative_attention_num_buckets"))
    t.no_table =
        "a learned relative-position bias on the attention scores (T5's buckets), not a table of absolute positions";
  else if (kLearned.count(t.family) || kFromPadding.count(t.family)) {
    t.lacks = kLearned.count(t.family) ? kLearned.at(t.family) : "embeddings.position_embeddings.weight";
    t.no_table = fmt::format("model_type {} keeps a learned table ({}), but it is not among the {} found", t.family,
                             t.lacks, counted(static_cast<int64_t>(shapes.size()), "tensor"));
    for (const auto& [name, shape] : shapes)  // there, but of another shape than a table's
      if (ends_with(name, t.lacks)) {
        std::string dims;
        for (const int64_t d : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
        t.no_table = fmt::format(
            "model_type {} keeps a learned table ({}); {} is there, but of shape [{}], not 2-D "
            "(positions x dims)",
            t.family, t.lacks, name, dims);
      }
    t.unknown = true;
  } else {
    t.no_table = "no position table of a known family (wpe, embed_positions, position_embeddings, position_embedding)";
    t.unknown = true;
  }
  return t;
}

nlohmann::json to_json(const PositionTableSpec& s) {
  nlohmann::json j = {{"tensor", s.tensor},
                      {"role", s.role},
                      {"shape", s.shape},
                      {"rows", s.rows},
                      {"dims", s.dims},
                      {"offset", s.offset},
                      {"class_rows", s.class_rows},
                      {"positions", s.positions()},
                      {"first_row", s.first_row()},
                      {"frozen", s.frozen},
                      {"skipped", s.skipped}};
  j["grid"] = s.grid_rows ? nlohmann::json{s.grid_rows, s.grid_cols} : nlohmann::json(nullptr);
  return j;
}

nlohmann::json to_json(const ModelTables& t) {
  nlohmann::json tables = nlohmann::json::array();
  for (const auto& s : t.tables) tables.push_back(to_json(s));
  nlohmann::json j = {{"family", t.family}, {"layout", t.layout}, {"tables", tables}};
  if (!t.no_table.empty()) j["no_table"] = t.no_table;
  return j;
}

std::string tables_text(const ModelTables& t) {
  std::string s =
      fmt::format("family {}{}\n", t.family.empty() ? "unknown" : t.family,
                  t.layout.empty() ? "" : fmt::format(" ({} layout: layer 0's attention is read)", t.layout));
  if (t.tables.empty()) return s + "no learned position table: " + t.no_table + "\n";
  for (const auto& p : t.tables) {
    const std::string kind = p.frozen      ? "fixed sinusoid (not learned)"
                             : p.grid_rows ? fmt::format("learned, {} x {} patch grid", p.grid_rows, p.grid_cols)
                                           : "learned";
    s += fmt::format("  {:<8} {}  {} rows x {}: positions 0..{} are rows {}..{}; {}{}\n", p.role, p.tensor, p.rows,
                     p.dims, p.positions() - 1, p.first_row(), p.rows - 1, kind,
                     p.skipped.empty() ? "" : "; left out: " + p.skipped);
  }
  return s;
}

}  // namespace poslab
