// Reading a position table from a file: .npy or .safetensors (one named tensor). A poslab checkpoint's table is
// read by train/checkpoint.h; load/table_source.h chooses among them.
#pragma once

#include <torch/torch.h>

#include <string>

namespace poslab {

// A 2-D float32 or float64 .npy file -> (P, d) float64.
torch::Tensor read_npy_table(const std::string& path);

// Tensor `name` of a .safetensors file (F32, F16, BF16, F64 or I64) -> float64, its own shape.
// Throws poslab::Error naming the file: truncated file, bad header, unknown name (the names present are
// listed), another dtype.
torch::Tensor read_safetensors_tensor(const std::string& path, const std::string& name);

}  // namespace poslab
