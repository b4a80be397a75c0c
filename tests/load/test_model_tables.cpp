// Hugging Face model folders saved by transformers itself (tests/fixtures/hf, scripts/make_hf_fixtures.py): every
// family's tables found on the right rows (against the manifest the script took from transformers' own modules),
// layer 0's kernels and cross-width agreement against NumPy, and the errors of damaged folders.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "analysis/agreement.h"
#include "analysis/table_io.h"
#include "load/model_tables.h"
#include "load/table_source.h"
#include "source_paths.h"
#include "test_util.h"
#include "util/fs.h"

namespace poslab {
namespace {

namespace fs = std::filesystem;
using test::error_of;

std::string hf(const std::string& rel) { return test::source_dir() + "/tests/fixtures/hf/" + rel; }

nlohmann::json load_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(ModelTables, EveryFamilysTablesOnTheRowsTransformersUses) {
  const auto fixtures = load_json(hf("manifest.json")).at("fixtures");
  int checked = 0;
  for (const auto& [name, f] : fixtures.items()) {
    if (name == "gpt2_bin") continue;  // pickles only: the error test below
    SCOPED_TRACE(name);
    const ModelFolder m = open_model_folder(hf(name));
    EXPECT_EQ(m.tensors.size(), f.at("tensors").size());
    const ModelTables t = find_position_tables(m.config, tensor_shapes(m));
    EXPECT_EQ(t.family, f.at("model_type").get<std::string>());
    const auto& expected = f.at("tables");
    ASSERT_EQ(t.tables.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      const auto& e = expected[i];
      const PositionTableSpec& s = t.tables[i];
      EXPECT_EQ(s.tensor, e.at("name").get<std::string>());
      EXPECT_EQ(s.role, e.at("role").get<std::string>());
      EXPECT_EQ(s.shape, e.at("shape").get<std::vector<int64_t>>());
      EXPECT_EQ(s.offset, e.at("offset").get<int64_t>());
      EXPECT_EQ(s.class_rows, e.at("class_rows").get<int64_t>());
      EXPECT_EQ(s.positions(), e.at("positions").get<int64_t>());
      EXPECT_EQ(s.frozen, e.at("frozen").get<bool>());
      if (e.at("grid").is_null()) {
        EXPECT_EQ(s.grid_rows, 0);
      } else {
        EXPECT_EQ(s.grid_rows, e["grid"][0].get<int64_t>());
        EXPECT_EQ(s.grid_cols, e["grid"][1].get<int64_t>());
      }
    }
    // The learned tables read: the stored rows from the first position on, as float64.
    for (const ModelTable& mt : load_model_tables(m, t)) {
      const auto stored = read_model_tensor(m, mt.spec.tensor).reshape({mt.spec.rows, mt.spec.dims});
      EXPECT_EQ(mt.rows.scalar_type(), torch::kFloat64);
      EXPECT_EQ(mt.rows.size(0), mt.spec.positions());
      EXPECT_TRUE(torch::equal(mt.rows, stored.slice(0, mt.spec.first_row())));
    }
    if (f.contains("uses")) {
      EXPECT_NE(t.no_table.find(f["uses"].get<std::string>()), std::string::npos) << t.no_table;
    }
    ++checked;
  }
  EXPECT_GE(checked, 18);
}

TEST(ModelTables, HalfPrecisionAndShardedFoldersRead) {
  for (const char* name : {"gpt2_fp16", "gpt2_bf16"}) {
    const ModelFolder m = open_model_folder(hf(name));
    EXPECT_EQ(m.tensors.at("transformer.wpe.weight").entry.dtype, std::string(name) == "gpt2_fp16" ? "F16" : "BF16");
    std::string source;
    const auto W = model_table(hf(name), "", source).rows;
    EXPECT_EQ(W.scalar_type(), torch::kFloat64);
    EXPECT_EQ(W.size(0), 24);
    // value for value what LibTorch makes of the file's 16-bit words (the header's offsets read here by hand)
    const std::string bytes = read_file(hf(name) + "/model.safetensors");
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    const auto entry = nlohmann::json::parse(bytes.substr(8, n))["transformer.wpe.weight"];
    const size_t begin = 8 + n + entry["data_offsets"][0].get<size_t>();
    std::string words = bytes.substr(begin, 24 * 16 * 2);
    const auto half =
        torch::from_blob(words.data(), {24, 16}, std::string(name) == "gpt2_fp16" ? torch::kHalf : torch::kBFloat16);
    EXPECT_TRUE(torch::equal(W, half.to(torch::kFloat64))) << name;
    EXPECT_GT(W.abs().sum().item<double>(), 0);
  }
  const ModelFolder m = open_model_folder(hf("gpt2_sharded"));
  EXPECT_GE(m.files.size(), 2u);
  std::set<std::string> files;
  for (const auto& [n, w] : m.tensors) files.insert(w.file);
  EXPECT_GE(files.size(), 2u);  // the tensors come from more than one shard
  EXPECT_EQ(find_position_tables(m.config, tensor_shapes(m)).layout, "gpt2");
}

// Layer 0's position-only kernels of a GPT-2-layout (causal, Conv1D weights) and a BERT-layout folder
// (bidirectional, LayerNorm over word + position + token type) equal NumPy's loop over the same weights.
TEST(ModelTables, LayerZeroKernelsEqualNumPy) {
  const auto refs = load_json(hf("references.json")).at("attention");
  for (const char* name : {"gpt2", "bert"}) {
    SCOPED_TRACE(name);
    const auto& r = refs.at(name);
    const ModelFolder m = open_model_folder(hf(name));
    const ModelTables t = find_position_tables(m.config, tensor_shapes(m));
    const std::vector<ModelTable> tables = load_model_tables(m, t);
    ASSERT_EQ(tables.size(), 1u);
    const AttentionWeights w = layer0_weights(m, t, tables[0]);
    EXPECT_EQ(w.causal, r.at("causal").get<bool>());
    EXPECT_DOUBLE_EQ(w.ln_eps, r.at("eps").get<double>());
    const AttentionKernels k = attention_kernels(w);
    ASSERT_EQ(k.n_head, r.at("n_head").get<int64_t>());
    for (const auto& head : r.at("heads")) {
      const int h = head.at("head").get<int>();
      const auto A = head.at("A").get<std::vector<std::vector<double>>>();
      double worst = 0;
      for (size_t i = 0; i < A.size(); ++i)
        for (size_t j = 0; j < A.size(); ++j)
          worst = std::max(worst, std::abs(k.kernels[h][i][j].item<double>() - A[i][j]));
      EXPECT_LT(worst, 1e-10) << "head " << h;
      EXPECT_NEAR(k.kernels[h][23][0].item<double>(), A[23][0], 1e-10);
    }
    EXPECT_EQ(token_embedding(m, t).size(1), tables[0].rows.size(1));
  }
}

TEST(ModelTables, CrossWidthAgreementEqualsNumPy) {
  const auto r = load_json(hf("references.json")).at("agreement");
  // The two tables straight from their folders, and the .npy copies NumPy read.
  std::string sa, sb;
  const auto A = model_table(hf(r["a"]["fixture"].get<std::string>()), "", sa).rows;
  const auto B = model_table(hf(r["b"]["fixture"].get<std::string>()), "", sb).rows;
  EXPECT_TRUE(torch::equal(A, read_npy_table(hf(r["a"]["npy"].get<std::string>()))));
  EXPECT_TRUE(torch::equal(B, read_npy_table(hf(r["b"]["npy"].get<std::string>()))));
  ASSERT_NE(A.size(1), B.size(1));
  const Agreement g = table_agreement(A, B, sa, sb);
  EXPECT_NEAR(g.cka, r.at("cka").get<double>(), 1e-10);
  EXPECT_NEAR(g.similarity_correlation, r.at("similarity_correlation").get<double>(), 1e-10);
}

TEST(ModelTables, DamagedFoldersNameTheFileAndTheWayOn) {
  test::TempDir dir;
  // Pickles only: the command that converts them.
  std::string msg = error_of([] { open_model_folder(hf("gpt2_bin")); });
  EXPECT_NE(msg.find("PyTorch pickles only (pytorch_model.bin)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("save_file"), std::string::npos) << msg;
  // No weights at all.
  fs::create_directories(dir / "empty");
  std::ofstream(dir / "empty/config.json") << "{\"model_type\": \"gpt2\"}";
  msg = error_of([&] { open_model_folder(dir / "empty"); });
  EXPECT_NE(msg.find("empty: no model weights"), std::string::npos) << msg;
  // A shard the index names is missing.
  fs::copy(hf("gpt2_sharded"), dir / "sharded");
  std::string shard;
  for (const auto& f : fs::directory_iterator(dir / "sharded"))
    if (f.path().extension() == ".safetensors") shard = f.path().filename().string();
  fs::remove(fs::path(dir / "sharded") / shard);
  msg = error_of([&] { open_model_folder(dir / "sharded"); });
  EXPECT_NE(msg.find("names the shard " + shard + ", which is not in"), std::string::npos) << msg;
  // A truncated weight file.
  fs::copy(hf("gpt2"), dir / "cut");
  fs::resize_file(fs::path(dir / "cut") / "model.safetensors", 4000);
  msg = error_of([&] { open_model_folder(dir / "cut"); });
  EXPECT_NE(msg.find("model.safetensors: tensor '"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lies outside the file (truncated?)"), std::string::npos) << msg;
  // A config.json that is not JSON.
  fs::copy(hf("gpt2"), dir / "badconfig");
  std::ofstream(dir / "badconfig/config.json") << "{model_type: gpt2";
  msg = error_of([&] { open_model_folder(dir / "badconfig"); });
  EXPECT_NE(msg.find("config.json: not JSON (at line 1, column 2: syntax error"), std::string::npos) << msg;
  // One cut short, as by a download that stopped: said so.
  const std::string whole = read_file(hf("gpt2/config.json"));
  std::ofstream(dir / "badconfig/config.json", std::ios::trunc) << whole.substr(0, 100);
  msg = error_of([&] { open_model_folder(dir / "badconfig"); });
  EXPECT_NE(msg.find("config.json: cut short: the text ends before the JSON does (at line"), std::string::npos) << msg;
  // A config.json that is a folder; none at all, where layer 0's heads need it.
  fs::remove(dir / "badconfig/config.json");
  fs::create_directories(dir / "badconfig/config.json");
  msg = error_of([&] { open_model_folder(dir / "badconfig"); });
  EXPECT_NE(msg.find("config.json: is a folder, not the model's config file"), std::string::npos) << msg;
  fs::remove(dir / "badconfig/config.json");
  const ModelFolder bare = open_model_folder(dir / "badconfig");
  const ModelTables bare_tables = find_position_tables(bare.config, tensor_shapes(bare));
  const std::vector<ModelTable> bare_table = load_model_tables(bare, bare_tables);
  ASSERT_EQ(bare_table.size(), 1u);
  msg = error_of([&] { layer0_weights(bare, bare_tables, bare_table[0]); });
  EXPECT_NE(msg.find("badconfig/config.json is missing: layer 0's heads (n_head) are read from it"), std::string::npos)
      << msg;
  // A head count in config.json that cannot be this model's (layer 0 is 16 wide): the config is named, not the
  // weights, whichever key holds it.
  for (const auto& [layout, key] :
       {std::pair<std::string, std::string>{"gpt2", "n_head"}, {"bert", "num_attention_heads"}})
    for (const int heads : {3, 0, -2, 32}) {
      fs::remove_all(dir / "heads");
      fs::copy(hf(layout), dir / "heads");
      nlohmann::json config = nlohmann::json::parse(read_file(hf(layout + "/config.json")));
      config[key] = heads;
      std::ofstream(dir / "heads/config.json", std::ios::trunc) << config.dump();
      const ModelFolder m = open_model_folder(dir / "heads");
      const ModelTables t = find_position_tables(m.config, tensor_shapes(m));
      const std::vector<ModelTable> tables = load_model_tables(m, t);
      msg = error_of([&] { layer0_weights(m, t, tables.at(0)); });
      const std::string why = heads < 1 ? "is no number of attention heads (1 or more)"
                                        : "does not divide the width of layer 0's attention, 16";
      EXPECT_EQ(msg.rfind(m.config_path + ": " + key + " " + std::to_string(heads) + " " + why + " | ", 0), 0u) << msg;
    }
  // A NaN in a weight the table is read beside (the token embedding; layer 0's LayerNorm): named, with its file,
  // not NaN figures or LibTorch's error from an eigendecomposition.
  for (const char* weight : {"wte.weight", "h.0.ln_1.weight"}) {
    fs::remove_all(dir / "nan");
    fs::copy(hf("gpt2"), dir / "nan");
    const ModelFolder clean = open_model_folder(dir / "nan");
    const ModelTables t = find_position_tables(clean.config, tensor_shapes(clean));
    const auto& w = clean.tensors.at(t.prefix + weight);
    ASSERT_EQ(w.entry.dtype, "F32");
    {
      std::fstream f(w.file, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(w.entry.offset + 4));
      const float nan = std::nanf("");
      f.write(reinterpret_cast<const char*>(&nan), sizeof nan);
    }
    const ModelFolder m = open_model_folder(dir / "nan");
    const std::vector<ModelTable> tables = load_model_tables(m, t);
    const std::string expected = w.file + ": tensor '" + t.prefix + weight + "' holds 1 NaN or Inf value";
    msg = error_of([&] { layer0_weights(m, t, tables[0]); });
    EXPECT_EQ(msg.rfind(expected, 0), 0u) << msg;
    if (std::string(weight) == "wte.weight") {
      EXPECT_EQ(error_of([&] { token_embedding(m, t); }).rfind(expected, 0), 0u);
    }
  }
  // An index whose shard lacks a tensor it names.
  fs::copy(hf("gpt2"), dir / "badindex");
  std::ofstream(dir / "badindex/model.safetensors.index.json")
      << R"({"metadata": {}, "weight_map": {"transformer.wpe.weight": "model.safetensors", "ghost": "model.safetensors"}})";
  msg = error_of([&] { open_model_folder(dir / "badindex"); });
  EXPECT_NE(msg.find("tensor 'ghost' is not in its shard model.safetensors"), std::string::npos) << msg;
  // Several tables and no --tensor; no table at all.
  std::string source;
  msg = error_of([&] { model_table(hf("bart"), "", source); });
  EXPECT_NE(msg.find("2 position tables (model.encoder.embed_positions.weight, model.decoder.embed_positions.weight)"),
            std::string::npos)
      << msg;
  msg = error_of([&] { model_table(hf("llama"), "", source); });
  EXPECT_NE(msg.find("no learned position table (rotary"), std::string::npos) << msg;
  msg = error_of([&] { model_table(hf("gpt2"), "nope", source); });
  EXPECT_NE(msg.find("no tensor named 'nope'"), std::string::npos) << msg;
}

TEST(ModelTables, TheIndexReaderChecksItsFileNames) {
  EXPECT_EQ(parse_safetensors_index(R"({"weight_map": {"a": "x.safetensors"}})", "i.json").at("a"), "x.safetensors");
  for (const char* bad : {"[]", "{}", R"({"weight_map": 3})", R"({"weight_map": {"a": 3}})",
                          R"({"weight_map": {"a": "../x.safetensors"}})", R"({"weight_map": {}})"}) {
    const std::string msg = error_of([&] { parse_safetensors_index(bad, "i.json"); });
    EXPECT_EQ(msg.rfind("i.json: ", 0), 0u) << bad << " -> " << msg;
  }
}

}  // namespace
}  // namespace poslab
