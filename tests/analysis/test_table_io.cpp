#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>

#include "analysis/table_io.h"
#include "config/config.h"
#include "model/gpt.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "util/error.h"

namespace poslab {
namespace {

using test::TempDir;
using test::write_text;

// A .safetensors file: u64 header length, JSON header, data.
std::string safetensors(const std::vector<std::tuple<std::string, std::string, std::vector<int64_t>, std::string>>& tensors) {
  nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
  std::string data;
  for (const auto& [name, dtype, shape, bytes] : tensors) {
    header[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {data.size(), data.size() + bytes.size()}}};
    data += bytes;
  }
  const std::string h = header.dump();
  const uint64_t n = h.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + h + data;
}

template <typename T>
std::string raw(const torch::Tensor& t) {
  auto c = t.contiguous();
  return std::string(reinterpret_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel()) * sizeof(T));
}

TEST(TableIo, SafetensorsF32F16Bf16) {
  TempDir dir;
  auto w = torch::randn({6, 4});
  write_text(dir / "m.safetensors",
             safetensors({{"wpe.weight", "F32", {6, 4}, raw<float>(w)},
                          {"h", "F16", {6, 4}, raw<at::Half>(w.to(torch::kHalf))},
                          {"b", "BF16", {6, 4}, raw<at::BFloat16>(w.to(torch::kBFloat16))}}));
  EXPECT_TRUE(torch::equal(read_safetensors_tensor(dir / "m.safetensors", "wpe.weight"), w.to(torch::kFloat64)));
  EXPECT_TRUE(torch::allclose(read_safetensors_tensor(dir / "m.safetensors", "h"), w.to(torch::kFloat64), 1e-2, 1e-2));
  EXPECT_TRUE(torch::allclose(read_safetensors_tensor(dir / "m.safetensors", "b"), w.to(torch::kFloat64), 2e-2, 2e-2));
}

TEST(TableIo, SafetensorsBadInputNamesTheFile) {
  TempDir dir;
  auto w = torch::randn({6, 4});
  const std::string good = safetensors({{"wpe.weight", "F32", {6, 4}, raw<float>(w)}, {"wte.weight", "F32", {6, 4}, raw<float>(w)}});
  write_text(dir / "good.safetensors", good);
  auto message = [&](const std::string& file, const std::string& name) {
    try {
      read_safetensors_tensor(dir / file, name);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string unknown = message("good.safetensors", "position_embeddings");
  EXPECT_NE(unknown.find("no tensor named 'position_embeddings'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("wpe.weight, wte.weight"), std::string::npos) << unknown;
  write_text(dir / "trunc.safetensors", good.substr(0, good.size() - 10));
  EXPECT_NE(message("trunc.safetensors", "wte.weight").find("trunc.safetensors: tensor 'wte.weight' lies outside"),
            std::string::npos);
  write_text(dir / "short.safetensors", good.substr(0, 20));
  EXPECT_NE(message("short.safetensors", "wpe.weight").find("truncated"), std::string::npos);
  write_text(dir / "tiny.safetensors", "abc");
  EXPECT_NE(message("tiny.safetensors", "wpe.weight").find("truncated"), std::string::npos);
  write_text(dir / "int.safetensors", safetensors({{"i", "I32", {6, 4}, raw<int32_t>(torch::zeros({6, 4}, torch::kInt32))}}));
  EXPECT_NE(message("int.safetensors", "i").find("dtype I32"), std::string::npos);
  write_text(dir / "size.safetensors", safetensors({{"s", "F32", {7, 4}, raw<float>(w)}}));
  EXPECT_NE(message("size.safetensors", "s").find("its shape needs 112"), std::string::npos);
  std::string not_json = good;
  not_json[9] = '#';
  write_text(dir / "json.safetensors", not_json);
  EXPECT_NE(message("json.safetensors", "wpe.weight").find("not a JSON object"), std::string::npos);
  EXPECT_NE(message("missing.safetensors", "wpe.weight").find("missing.safetensors"), std::string::npos);
}

TEST(TableIo, CheckpointPositionTable) {
  TempDir dir;
  Config cfg = load_config("", {"model.n_layer=1", "model.n_head=2", "model.n_embd=16", "model.block_size=8"});
  GPT model(cfg.model, 20);
  CheckpointMeta meta;
  meta.config_yaml = to_yaml(cfg);
  save_checkpoint(dir / "c.pt", model, nullptr, meta);
  EXPECT_TRUE(torch::equal(read_checkpoint_table(dir / "c.pt"), model->wpe->weight.to(torch::kFloat64)));

  cfg.model.position = "none";
  GPT none(cfg.model, 20);
  meta.config_yaml = to_yaml(cfg);
  save_checkpoint(dir / "none.pt", none, nullptr, meta);
  try {
    read_checkpoint_table(dir / "none.pt");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no position table"), std::string::npos) << e.what();
  }
}

TEST(TableIo, LoadTableDispatchesAndNamesItsSource) {
  TempDir dir;
  std::string source;
  TableSource t;
  t.synthetic = "handbook";
  t.positions = 16;
  t.dims = 8;
  EXPECT_EQ(load_table(t, source).sizes(), (std::vector<int64_t>{16, 8}));
  EXPECT_EQ(source, "synthetic handbook (16 x 8, seed 0)");
  auto w = torch::randn({6, 4});
  write_text(dir / "m.safetensors", safetensors({{"wpe.weight", "F32", {6, 4}, raw<float>(w)}}));
  t = TableSource{};
  t.input = dir / "m.safetensors";
  t.tensor = "wpe.weight";
  EXPECT_TRUE(torch::equal(load_table(t, source), w.to(torch::kFloat64)));
  EXPECT_EQ(source, dir / "m.safetensors:wpe.weight");
  auto message = [&](const TableSource& bad) {
    try {
      load_table(bad, source);
    } catch (const Error& e) {
      return std::string(e.what()) + " | " + e.hint();
    }
    return std::string("no error");
  };
  t.tensor.clear();
  EXPECT_NE(message(t).find("pass --tensor NAME"), std::string::npos);
  t.synthetic = "random";
  EXPECT_NE(message(t).find("not both"), std::string::npos);
  EXPECT_NE(message(TableSource{}).find("nothing to analyse"), std::string::npos);
  TableSource missing;
  missing.input = dir / "nope.npy";
  EXPECT_NE(message(missing).find("nope.npy: not found"), std::string::npos);
  write_text(dir / "t.csv", "1,2\n");
  TableSource csv;
  csv.input = dir / "t.csv";
  EXPECT_NE(message(csv).find("unknown kind of input '.csv'"), std::string::npos);
}

}  // namespace
}  // namespace poslab
