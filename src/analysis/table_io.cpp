#include "analysis/table_io.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>

#include "analysis/baselines.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/npy.h"

namespace poslab {

torch::Tensor read_npy_table(const std::string& path) {
  NpyArray a = read_npy(path);
  return torch::from_blob(a.data.data(), {a.shape[0], a.shape[1]}, torch::kFloat64).clone();
}

torch::Tensor read_safetensors_tensor(const std::string& path, const std::string& name) {
  const std::string bytes = read_file(path);
  const std::string hint = "pass a .safetensors file (as written by the safetensors library)";
  uint64_t header_len = 0;
  if (bytes.size() < 8) throw Error(path + ": truncated safetensors file (" + std::to_string(bytes.size()) + " bytes)", hint);
  std::memcpy(&header_len, bytes.data(), 8);
  if (header_len > bytes.size() - 8)
    throw Error(path + ": truncated safetensors file: the header claims " + std::to_string(header_len) + " bytes, " +
                    std::to_string(bytes.size() - 8) + " follow",
                hint);
  const auto header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(header_len),
                                            nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) throw Error(path + ": the safetensors header is not a JSON object", hint);
  if (!header.contains(name)) {
    std::string names;
    for (const auto& [key, value] : header.items())
      if (key != "__metadata__") names += (names.empty() ? "" : ", ") + key;
    throw Error(path + ": no tensor named '" + name + "'; the file holds: " + (names.empty() ? "(none)" : names),
                "pass one of these names with --tensor");
  }
  const auto& info = header[name];
  const size_t data_start = 8 + header_len;
  const size_t data_size = bytes.size() - data_start;
  try {
    const std::string dtype = info.at("dtype").get<std::string>();
    const auto shape = info.at("shape").get<std::vector<int64_t>>();
    const auto offsets = info.at("data_offsets").get<std::vector<uint64_t>>();
    torch::ScalarType type;
    size_t elem = 0;
    if (dtype == "F32") { type = torch::kFloat32; elem = 4; }
    else if (dtype == "F16") { type = torch::kFloat16; elem = 2; }
    else if (dtype == "BF16") { type = torch::kBFloat16; elem = 2; }
    else if (dtype == "F64") { type = torch::kFloat64; elem = 8; }
    else throw Error(path + ": tensor '" + name + "' has dtype " + dtype + "; supported: F32, F16, BF16, F64");
    int64_t numel = 1;
    for (int64_t s : shape) {
      if (s < 0) throw Error(path + ": tensor '" + name + "' has a negative dimension", hint);
      numel *= s;
    }
    if (offsets.size() != 2 || offsets[1] < offsets[0] || offsets[1] > data_size)
      throw Error(path + ": tensor '" + name + "' lies outside the file (truncated?)", "download the file again");
    if (offsets[1] - offsets[0] != static_cast<uint64_t>(numel) * elem)
      throw Error(path + ": tensor '" + name + "' holds " + std::to_string(offsets[1] - offsets[0]) + " bytes, its shape needs " +
                      std::to_string(numel * static_cast<int64_t>(elem)),
                  hint);
    auto t = torch::empty(shape, type);
    std::memcpy(t.data_ptr(), bytes.data() + data_start + offsets[0], static_cast<size_t>(numel) * elem);
    return t.to(torch::kFloat64);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": malformed entry for tensor '" + name + "': " + e.what(), hint);
  }
}

torch::Tensor read_checkpoint_table(const std::string& path) {
  (void)read_checkpoint_meta(path);  // checks that it is a readable poslab checkpoint
  torch::serialize::InputArchive ar, model_ar, wpe_ar;
  ar.load_from(path);
  torch::Tensor w;
  if (!ar.try_read("model", model_ar) || !model_ar.try_read("wpe", wpe_ar) || !wpe_ar.try_read("weight", w))
    throw Error(path + ": the checkpoint has no position table (model.position = none)",
                "analyse a run with model.position learned or sinusoidal");
  return w.to(torch::kFloat64);
}

torch::Tensor load_table(const TableSource& t, std::string& source) {
  if (!t.synthetic.empty()) {
    if (!t.input.empty()) throw Error(t.input + ": give a file or --synthetic, not both");
    source = "synthetic " + t.synthetic + " (" + std::to_string(t.positions) + " x " + std::to_string(t.dims) +
             ", seed " + std::to_string(t.seed) + ")";
    return synthetic_table(t.synthetic, t.positions, t.dims, t.seed, t.std);
  }
  if (t.input.empty())
    throw Error("nothing to analyse", "pass a run folder, a .pt, .npy or .safetensors file, or --synthetic KIND");
  source = t.input;
  std::error_code ec;
  if (!std::filesystem::exists(t.input, ec)) throw Error(t.input + ": not found", "pass an existing file or run folder");
  const std::string ext = std::filesystem::path(t.input).extension().string();
  if (ext == ".npy") return read_npy_table(t.input);
  if (ext == ".pt") return read_checkpoint_table(t.input);
  if (ext == ".safetensors") {
    if (t.tensor.empty())
      throw Error(t.input + ": which tensor? pass --tensor NAME",
                  "GPT-2: --tensor wpe.weight; BERT: --tensor bert.embeddings.position_embeddings.weight");
    source = t.input + ":" + t.tensor;
    return read_safetensors_tensor(t.input, t.tensor);
  }
  throw Error(t.input + ": unknown kind of input '" + ext + "'",
              "pass a run folder, a .pt checkpoint, a .npy or a .safetensors file");
}

}  // namespace poslab
