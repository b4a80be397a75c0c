// The .safetensors container: an 8-byte little-endian header length, a JSON header, the data. No LibTorch here,
// so the parser can be fuzzed on its own (tests/fuzz/).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace poslab {

struct SafetensorsEntry {
  std::string dtype;           // F32 | F16 | BF16 | F64 | I64
  size_t element_size = 0;     // bytes per element
  std::vector<int64_t> shape;
  size_t offset = 0;           // of the first byte in the file
  size_t bytes = 0;            // = product(shape) * element_size
};

// Finds tensor `name` in the file's bytes. Throws poslab::Error naming `path`: truncated file, header that is
// not a JSON object, unknown name (the names present are listed), unsupported dtype, shape and size that disagree.
SafetensorsEntry find_safetensors_entry(const std::string& bytes, const std::string& name, const std::string& path);

}  // namespace poslab
