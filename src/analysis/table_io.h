// Reading a position table from a file: .npy, .safetensors (one named tensor) or a poslab checkpoint.
#pragma once

#include <torch/torch.h>

#include <string>

namespace poslab {

// A 2-D float32 or float64 .npy file -> (P, d) float64.
torch::Tensor read_npy_table(const std::string& path);

// Tensor `name` of a .safetensors file (F32, F16, BF16 or F64) -> float64, its own shape.
// Throws poslab::Error naming the file: truncated file, bad header, unknown name (the names present are
// listed), another dtype.
torch::Tensor read_safetensors_tensor(const std::string& path, const std::string& name);

// The position table wpe.weight of a poslab checkpoint -> (block_size, n_embd) float64.
torch::Tensor read_checkpoint_table(const std::string& path);

// Where one table comes from, as the analyze and report commands take it.
struct TableSource {
  std::string input;       // .npy, .pt or .safetensors file (empty with synthetic)
  std::string tensor;      // tensor name for .safetensors
  std::string synthetic;   // random | sinusoidal | handbook (empty for a file)
  int64_t positions = 1024, dims = 768;
  uint64_t seed = 0;
  double std = 0.02;       // of a random table
};

// Loads the table and names it in `source` ("file.safetensors:wpe.weight", "synthetic random (…)").
// Throws poslab::Error naming the file: missing, unknown kind, no --tensor for .safetensors, both a file and
// --synthetic, or neither.
torch::Tensor load_table(const TableSource& t, std::string& source);

}  // namespace poslab
