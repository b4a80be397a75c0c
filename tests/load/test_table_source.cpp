#include <gtest/gtest.h>

#include "config/config.h"
#include "load/table_source.h"
#include "model/gpt.h"
#include "test_safetensors.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "util/error.h"

namespace poslab {
namespace {

using test::raw;
using test::safetensors;
using test::TempDir;
using test::write_text;

TEST(TableSource, LoadTableDispatchesAndNamesItsSource) {
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
  // No --tensor: the table its family keeps (GPT-2's wpe.weight, from row 0), named by its rows.
  t.tensor.clear();
  EXPECT_TRUE(torch::equal(load_table(t, source), w.to(torch::kFloat64)));
  EXPECT_EQ(source, dir / "m.safetensors:wpe.weight");
  // A file with no table of a known family: which tensor?
  write_text(dir / "other.safetensors", safetensors({{"h", "F32", {6, 4}, raw<float>(w)}}));
  t.input = dir / "other.safetensors";
  EXPECT_NE(message(t).find("other.safetensors: no learned position table"), std::string::npos) << message(t);
  EXPECT_NE(message(t).find("pass --tensor NAME"), std::string::npos);
  EXPECT_EQ(message(t).find("one shard"), std::string::npos) << message(t);  // no family: nothing says it is a shard
  // A file of a family that keeps a table, without it (one shard of the model): the table it lacks, and the folder.
  std::filesystem::create_directories(dir / "shard");
  write_text(dir / "shard/config.json", R"({"model_type": "gpt2"})");
  write_text(dir / "shard/model-00002-of-00002.safetensors",
             safetensors({{"h.1.mlp.c_fc.weight", "F32", {6, 4}, raw<float>(w)}}));
  t.input = dir / "shard/model-00002-of-00002.safetensors";
  EXPECT_NE(message(t).find("no learned position table (model_type gpt2 keeps a learned table (wpe.weight), but it "
                            "is not among the 1 tensor found) | if this file is one shard of a model, pass the "
                            "model's folder"),
            std::string::npos)
      << message(t);
  t.input = dir / "m.safetensors";
  t.synthetic = "random";
  EXPECT_NE(message(t).find("not both"), std::string::npos);
  EXPECT_NE(message(TableSource{}).find("no table given"), std::string::npos);
  TableSource missing;
  missing.input = dir / "nope.npy";
  EXPECT_NE(message(missing).find("nope.npy: not found"), std::string::npos);
  write_text(dir / "t.csv", "1,2\n");
  TableSource csv;
  csv.input = dir / "t.csv";
  EXPECT_NE(message(csv).find("unknown kind of input '.csv'"), std::string::npos);
}

TEST(TableSource, ACheckpointGivesItsPositionTableAsFloat64) {
  TempDir dir;
  const Config cfg = load_config("", {"model.n_layer=1", "model.n_head=2", "model.n_embd=16", "model.block_size=8"});
  GPT model(cfg.model, 20);
  CheckpointMeta meta;
  meta.config_yaml = to_yaml(cfg);
  save_checkpoint(dir / "c.pt", model, nullptr, meta);
  TableSource t;
  t.input = dir / "c.pt";
  std::string source;
  EXPECT_TRUE(torch::equal(load_table(t, source), model->wpe->weight.to(torch::kFloat64)));
  EXPECT_EQ(source, dir / "c.pt");
}

}  // namespace
}  // namespace poslab
