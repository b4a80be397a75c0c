// The .safetensors container: an 8-byte little-endian header length, a JSON header, the data. No LibTorch here,
// so the parser can be fuzzed on its own (tests/fuzz/).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace poslab {

struct SafetensorsEntry {
  std::string dtype;        // F32 | F16 | BF16 | F64 | I64
  size_t element_size = 0;  // bytes per element
  std::vector<int64_t> shape;
  size_t offset = 0;  // of the first byte in the file
  size_t bytes = 0;   // = product(shape) * element_size
};

// Bytes of the header's length field and header, read from the file's first 8 bytes; throws poslab::Error naming
// `path` when the file is shorter than 8 bytes or than the header it announces.
uint64_t safetensors_header_length(const std::string& first8, size_t file_size, const std::string& path);

// Every tensor the header lists, by name. `header` is the JSON text after the 8-byte length; `file_size` the whole
// file's. Throws poslab::Error naming `path` and the tensor: header that is not a JSON object, unsupported dtype,
// data outside the file, shape and size that disagree.
std::map<std::string, SafetensorsEntry> parse_safetensors_header(const std::string& header, size_t file_size,
                                                                 const std::string& path);

// The same from the whole file's bytes.
std::map<std::string, SafetensorsEntry> list_safetensors_entries(const std::string& bytes, const std::string& path);

// Finds tensor `name` in the file's bytes. Throws poslab::Error naming `path`: truncated file, header that is
// not a JSON object, unknown name (the names present are listed), unsupported dtype, shape and size that disagree.
SafetensorsEntry find_safetensors_entry(const std::string& bytes, const std::string& name, const std::string& path);

// One tensor to write: name, dtype (F32, F16, BF16, F64, I64), shape, and its bytes in C order, little-endian.
struct SafetensorsTensor {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

// The bytes of a .safetensors file holding `tensors` in the given order, with `metadata` (string -> string) as the
// header's __metadata__, as the safetensors library writes it (data aligned to 8 bytes after the header).
// Throws poslab::Error naming the tensor whose bytes do not fit its shape and dtype.
std::string safetensors_file(const std::vector<SafetensorsTensor>& tensors,
                             const std::map<std::string, std::string>& metadata = {});

}  // namespace poslab
