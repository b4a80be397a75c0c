// Where each model family keeps its position tables, and which of their rows are positions. From config.json and
// the tensors' names and shapes alone (no data, no LibTorch: fuzzed with the folder's readers). docs/models.md has
// the table of families.
//
// Rows before position 0 ("offset rows": OPT's and BART's 2, the RoBERTa family's padding_idx + 1) and class-token
// rows (ViT, CLIP's vision tower) are left out and named; a vision table's other rows are a grid of patches.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace poslab {

struct PositionTableSpec {
  std::string tensor;                    // its name in the weight files
  std::string role;                      // "decoder", "encoder", "text", "vision" or "model" (a model's only table)
  std::vector<int64_t> shape;            // as stored (ViT's has a leading 1)
  int64_t rows = 0, dims = 0;            // stored rows and width
  int64_t offset = 0;                    // rows before position 0
  int64_t class_rows = 0;                // class-token rows after the offset rows (vision)
  int64_t grid_rows = 0, grid_cols = 0;  // the patches' grid (vision); 0 for a 1-D sequence
  bool frozen = false;                   // a fixed sinusoid, not learned (Whisper's encoder, DistilBERT's option)
  std::string skipped;                   // what the left-out rows are, "" when none
  int64_t positions() const { return rows - offset - class_rows; }
  int64_t first_row() const { return offset + class_rows; }
};

struct ModelTables {
  std::string family;  // config.json's model_type, or the family the tensor names show
  std::string layout;  // "gpt2" or "bert": layer 0's attention can be read (hf/layer0.h); "" otherwise
  std::vector<PositionTableSpec> tables;
  std::string no_table;  // what the model uses instead when it has no table (rotary, ALiBi, relative bias)
  bool unknown = false;  // no table and nothing known in its place: one shard of a model, or a family poslab lacks
  std::string lacks;     // the table its family keeps, when the files lack it (one shard given alone)
  std::string prefix;    // the tensor names' prefix before the layout's own names ("transformer.", "bert.", "")
};

// Finds the position tables among `shapes` (tensor name -> shape). Never throws: an unknown family gives the tables
// found by their names alone, or none (then no_table says what is known).
ModelTables find_position_tables(const nlohmann::json& config,
                                 const std::map<std::string, std::vector<int64_t>>& shapes);

// One line per table for `poslab inspect`: name, rows stored, positions, offset, kind.
std::string tables_text(const ModelTables& t);
nlohmann::json to_json(const PositionTableSpec& s);
nlohmann::json to_json(const ModelTables& t);

}  // namespace poslab
