#include "analysis/table_io.h"

#include <cstring>

#include "formats/npy.h"
#include "formats/safetensors.h"
#include "util/error.h"
#include "util/fs.h"

namespace poslab {

torch::Tensor read_npy_table(const std::string& path) {
  NpyArray a = read_npy(path);
  return torch::from_blob(a.data.data(), {a.shape[0], a.shape[1]}, torch::kFloat64).clone();
}

torch::Tensor read_safetensors_tensor(const std::string& path, const std::string& name) {
  const std::string bytes = read_file(path);
  const SafetensorsEntry e = find_safetensors_entry(bytes, name, path);
  const auto type = e.dtype == "F32"    ? torch::kFloat32
                    : e.dtype == "F16"  ? torch::kFloat16
                    : e.dtype == "BF16" ? torch::kBFloat16
                    : e.dtype == "I64"  ? torch::kInt64
                                        : torch::kFloat64;
  auto t = torch::empty(e.shape, type);
  std::memcpy(t.data_ptr(), bytes.data() + e.offset, e.bytes);  // a copy: the data may be unaligned in the file
  return t.to(torch::kFloat64);
}

}  // namespace poslab
