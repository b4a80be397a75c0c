#include "analysis/table_io.h"

#include <cstring>
#include <filesystem>

#include "formats/npy.h"
#include "formats/safetensors.h"
#include "util/error.h"
#include "util/fs.h"

namespace poslab {

torch::Tensor read_npy_table(const std::string& path) {
  NpyArray a;
  try {
    a = read_npy(path);
  } catch (const Error& e) {
    // A run's snapshot (its folder a run's snapshots/, beside the index) is no file to save again: the run wrote it.
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (dir.filename() != "snapshots" || !std::filesystem::is_regular_file(dir / "index.jsonl", ec)) throw;
    const std::string run = dir.parent_path().empty() ? "." : dir.parent_path().string();
    throw Error(e.what(), "a snapshot of the run in " + run +
                              ", damaged since it was written: put it back from a copy of the run, or take its line "
                              "out of snapshots/index.jsonl to read the run without it");
  }
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
