// The position tables of a Hugging Face model folder (or one .safetensors file), read with their rows mapped to
// positions: offset and class-token rows left out (hf/families.h), float16 and bfloat16 converted to float64.
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

#include "analysis/attention_kernels.h"
#include "hf/families.h"
#include "hf/model_folder.h"

namespace poslab {

struct ModelTable {
  PositionTableSpec spec;
  std::string source;  // "FOLDER:tensor rows A:B"
  torch::Tensor rows;  // (positions, dims) float64; a vision table's patches in row-major grid order
};

// name -> shape of every tensor of the folder (find_position_tables' input).
std::map<std::string, std::vector<int64_t>> tensor_shapes(const ModelFolder& m);

// One tensor of the folder, as stored, converted to float64. Throws poslab::Error naming the tensor and the folder
// when it is not there (the names present are listed) or its file cannot be read.
torch::Tensor read_model_tensor(const ModelFolder& m, const std::string& name);

// One table of the model, mapped to positions.
ModelTable load_model_table(const ModelFolder& m, const PositionTableSpec& s);

// Every learned table of the model (fixed sinusoids too when `with_frozen`), mapped to positions.
std::vector<ModelTable> load_model_tables(const ModelFolder& m, const ModelTables& t, bool with_frozen = false);

// What layer 0's attention reads the table with, for a GPT-2-layout folder (ln_1, then c_attn stored (in, out) as
// GPT-2's Conv1D: transposed here; causal) or a BERT-layout one (the embeddings' LayerNorm over word + position +
// token type 0, then the query and key maps; bidirectional). `table` is the mapped table. Throws poslab::Error when
// t.layout is empty or a tensor is missing.
AttentionWeights layer0_weights(const ModelFolder& m, const ModelTables& t, const ModelTable& table);

// The token embedding (V, C) added to the table in the same space: wte (GPT-2), word_embeddings (BERT); undefined
// without a layout.
torch::Tensor token_embedding(const ModelFolder& m, const ModelTables& t);

}  // namespace poslab
