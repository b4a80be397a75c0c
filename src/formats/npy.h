// NumPy .npy files (format 1.0): 2-D float32 writer and a 2-D float32/float64 reader.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace poslab {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<double> data;  // C order, converted to double
};

// Serialises a C-order float32 matrix (rows, cols) as .npy bytes.
std::string npy_bytes(const float* data, int64_t rows, int64_t cols);

// Reads a 2-D little-endian float32 or float64 .npy file. Throws poslab::Error naming the file for
// anything else: bad magic, truncated data, other dtype, Fortran order, not 2-D.
NpyArray read_npy(const std::string& path);

// The same on bytes in memory; `name` is used in error messages.
NpyArray parse_npy(const std::string& bytes, const std::string& name);

// The shape of a .npy file, from its header (the first MiB at most) and its size: every check read_npy makes but
// the values' own, without reading them. Throws poslab::Error naming the file as read_npy does.
std::vector<int64_t> npy_shape(const std::string& path);

}  // namespace poslab
