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

}  // namespace poslab
