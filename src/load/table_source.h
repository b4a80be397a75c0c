// Where one position table comes from, as `poslab analyze` and `poslab report` take it: a .npy, a .safetensors
// tensor, a poslab checkpoint, a run folder (its last snapshot), or a synthetic table. The analysis itself only ever
// receives the tensor.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "load/model_tables.h"

namespace poslab {

struct TableSource {
  std::string input;                     // .npy, .pt or .safetensors file (empty with synthetic)
  std::string tensor;                    // tensor name for .safetensors
  std::string synthetic;                 // random | sinusoidal | handbook | walk (empty for a file)
  int64_t positions = 1024, dims = 768;  // of a synthetic table
  uint64_t seed = 0;                     // of a synthetic random or handbook table
  double std = 0.02;                     // of a synthetic random table
};

// A Hugging Face model folder's or .safetensors file's table: the one learned table its family keeps (rows mapped to
// positions, load/model_tables.h), or tensor `tensor` (a recognised table mapped, any other as stored). Throws
// poslab::Error listing the tables when there are several and no `tensor`, or none.
ModelTable model_table(const std::string& input, const std::string& tensor, std::string& source);

// Loads the table as float64 and names it in `source` ("file.safetensors:wpe.weight", "synthetic random (…)").
// Throws poslab::Error naming the file: missing, unknown kind, no --tensor for .safetensors, both a file and
// --synthetic, or neither.
torch::Tensor load_table(const TableSource& t, std::string& source);

}  // namespace poslab
