// libFuzzer target: a model folder's config.json and model.safetensors.index.json readers, and the family rules fed
// the config. Any text must give a result that holds together or a poslab::Error.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "hf/families.h"
#include "hf/model_folder.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& [name, file] : poslab::parse_safetensors_index(text, "fuzz.index.json"))
      if (file.empty() || file.find('/') != std::string::npos) std::abort();  // a shard outside the folder
  } catch (const poslab::Error&) {
  }
  try {
    const nlohmann::json config = poslab::parse_model_config(text, "fuzz/config.json");
    // Every family's table names, with shapes that fit and shapes that do not.
    const std::map<std::string, std::vector<int64_t>> shapes = {
        {"transformer.wpe.weight", {24, 16}},
        {"transformer.h.0.attn.c_attn.weight", {16, 48}},
        {"model.decoder.embed_positions.weight", {3, 16}},
        {"model.encoder.embed_positions.weight", {26, 16}},
        {"roberta.embeddings.position_embeddings.weight", {26, 16}},
        {"embeddings.position_embeddings", {1, 17, 16}},
        {"vision_model.embeddings.position_embedding.weight", {5, 8}},
        {"text_model.embeddings.position_embedding.weight", {1, 8}}};
    const poslab::ModelTables t = poslab::find_position_tables(config, shapes);
    for (const auto& s : t.tables) {
      if (s.positions() < 1 || s.first_row() + s.positions() != s.rows) std::abort();
      if (s.grid_rows && s.grid_rows * s.grid_cols != s.positions()) std::abort();
    }
    if (t.tables.empty() && t.no_table.empty()) std::abort();
    (void)poslab::tables_text(t);
    (void)poslab::to_json(t).dump();
  } catch (const poslab::Error&) {
  }
  return 0;
}
