#include "app/table_source.h"

#include <filesystem>

#include "analysis/baselines.h"
#include "analysis/table_io.h"
#include "run/run_files.h"
#include "train/checkpoint.h"
#include "util/error.h"

namespace poslab {

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
  if (std::filesystem::is_directory(t.input, ec)) {  // a run folder: its last snapshot
    const std::vector<SnapshotRecord> index = read_snapshot_index(RunFolder(t.input));
    if (index.empty()) throw Error(t.input + ": the snapshot index is empty", "train for at least one step first");
    source = index.back().path;
    return read_npy_table(index.back().path);
  }
  const std::string ext = std::filesystem::path(t.input).extension().string();
  if (ext == ".npy") return read_npy_table(t.input);
  if (ext == ".pt") return read_checkpoint_position_table(t.input).to(torch::kFloat64);
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
