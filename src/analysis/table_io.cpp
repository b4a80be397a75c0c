#include "analysis/table_io.h"

#include <cstring>
#include <filesystem>

#include "analysis/baselines.h"
#include "analysis/safetensors.h"
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
  const SafetensorsEntry e = find_safetensors_entry(bytes, name, path);
  const auto type = e.dtype == "F32" ? torch::kFloat32 : e.dtype == "F16" ? torch::kFloat16
                  : e.dtype == "BF16" ? torch::kBFloat16 : torch::kFloat64;
  auto t = torch::empty(e.shape, type);
  std::memcpy(t.data_ptr(), bytes.data() + e.offset, e.bytes);  // a copy: the data may be unaligned in the file
  return t.to(torch::kFloat64);
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
