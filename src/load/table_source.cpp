#include "load/table_source.h"

#include <filesystem>
#include <limits>

#include "analysis/baselines.h"
#include "analysis/table_io.h"
#include "load/model_tables.h"
#include "run/run_files.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/memory.h"

namespace poslab {

ModelTable model_table(const std::string& input, const std::string& tensor, std::string& source) {
  const ModelFolder m = open_model_folder(input);
  const ModelTables t = find_position_tables(m.config, tensor_shapes(m));
  if (!tensor.empty()) {
    for (const PositionTableSpec& s : t.tables)
      if (s.tensor == tensor) {
        ModelTable mt = load_model_table(m, s);
        source = mt.source;
        return mt;
      }
    ModelTable mt;
    mt.spec.tensor = tensor;
    mt.rows = read_model_tensor(m, tensor);
    mt.source = source = input + ":" + tensor;
    return mt;
  }
  std::vector<ModelTable> tables = load_model_tables(m, t);
  if (tables.size() == 1) {
    source = tables[0].source;
    return tables[0];
  }
  if (tables.empty())
    throw Error(
        input + ": no learned position table (" + (t.no_table.empty() ? "fixed sinusoids only" : t.no_table) + ")",
        std::string(!t.lacks.empty() && std::filesystem::path(input).extension() == ".safetensors"
                        ? "if this file is one shard of a model, pass the model's folder (its "
                          "model.safetensors.index.json names every shard); or "
                        : "") +
            "pass --tensor NAME to read another tensor; poslab inspect " + input + " lists what it holds");
  std::string names;
  for (const auto& mt : tables) names += (names.empty() ? "" : ", ") + mt.spec.tensor;
  throw Error(input + ": " + std::to_string(tables.size()) + " position tables (" + names + "): which one?",
              "pass --tensor NAME; poslab analyze " + input + " with no --tensor analyses each");
}

torch::Tensor load_table(const TableSource& t, std::string& source) {
  if (!t.synthetic.empty()) {
    if (!t.input.empty())
      throw Error(t.input + ": give a file or --synthetic, not both",
                  "leave out INPUT to analyse the synthetic table, or --synthetic to analyse the file");
    source = "synthetic " + t.synthetic + " (" + std::to_string(t.positions) + " x " + std::to_string(t.dims) +
             ", seed " + std::to_string(t.seed) + ")";
    // the table itself, in float64, before it is made (its analysis is checked where it starts, after --rows)
    const double bytes = 8.0 * static_cast<double>(t.positions) * static_cast<double>(t.dims);
    check_memory_fits(bytes >= 9.0e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(bytes),
                      "--synthetic " + t.synthetic + " --positions " + std::to_string(t.positions) + " --dim " +
                          std::to_string(t.dims) + ": the table alone",
                      "fewer --positions or --dim; nothing was written", memory_room());
    return synthetic_table(t.synthetic, t.positions, t.dims, t.seed, t.std);
  }
  if (t.input.empty())
    throw Error("no table given: name the table to read",
                "pass a run folder, a .pt, .npy or .safetensors file, a model folder, or --synthetic KIND");
  source = t.input;
  std::error_code ec;
  if (!std::filesystem::exists(t.input, ec))
    throw Error(t.input + ": not found", "pass an existing file or run folder");
  const std::string ext = std::filesystem::path(t.input).extension().string();
  if (is_model_folder(t.input) || ext == ".safetensors") return model_table(t.input, t.tensor, source).rows;
  if (std::filesystem::is_directory(t.input, ec)) {  // a run folder: its last snapshot
    const std::vector<SnapshotRecord> index = read_snapshot_index(RunFolder(t.input));
    if (index.empty()) throw Error(t.input + ": the snapshot index is empty", "train for at least one step first");
    source = index.back().path;
    return read_npy_table(index.back().path);
  }
  if (ext == ".npy") return read_npy_table(t.input);
  if (ext == ".pt") return read_checkpoint_position_table(t.input).to(torch::kFloat64);
  throw Error(t.input + ": unknown kind of input '" + ext + "'",
              "pass a run folder, a .pt checkpoint, a .npy or a .safetensors file");
}

}  // namespace poslab
