#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>

#include "analysis/table_io.h"
#include "test_safetensors.h"
#include "test_util.h"
#include "util/error.h"

namespace poslab {
namespace {

using test::raw;
using test::safetensors;
using test::TempDir;
using test::write_text;

TEST(TableIo, SafetensorsF32F16Bf16) {
  TempDir dir;
  auto w = torch::randn({6, 4});
  write_text(dir / "m.safetensors", safetensors({{"wpe.weight", "F32", {6, 4}, raw<float>(w)},
                                                 {"h", "F16", {6, 4}, raw<at::Half>(w.to(torch::kHalf))},
                                                 {"b", "BF16", {6, 4}, raw<at::BFloat16>(w.to(torch::kBFloat16))}}));
  EXPECT_TRUE(torch::equal(read_safetensors_tensor(dir / "m.safetensors", "wpe.weight"), w.to(torch::kFloat64)));
  EXPECT_TRUE(torch::allclose(read_safetensors_tensor(dir / "m.safetensors", "h"), w.to(torch::kFloat64), 1e-2, 1e-2));
  EXPECT_TRUE(torch::allclose(read_safetensors_tensor(dir / "m.safetensors", "b"), w.to(torch::kFloat64), 2e-2, 2e-2));
}

TEST(TableIo, SafetensorsBadInputNamesTheFile) {
  TempDir dir;
  auto w = torch::randn({6, 4});
  const std::string good =
      safetensors({{"wpe.weight", "F32", {6, 4}, raw<float>(w)}, {"wte.weight", "F32", {6, 4}, raw<float>(w)}});
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
  write_text(dir / "int.safetensors",
             safetensors({{"i", "I32", {6, 4}, raw<int32_t>(torch::zeros({6, 4}, torch::kInt32))}}));
  EXPECT_NE(message("int.safetensors", "i").find("dtype I32"), std::string::npos);
  write_text(dir / "size.safetensors", safetensors({{"s", "F32", {7, 4}, raw<float>(w)}}));
  EXPECT_NE(message("size.safetensors", "s").find("its shape needs 112"), std::string::npos);
  std::string not_json = good;
  not_json[9] = '#';
  write_text(dir / "json.safetensors", not_json);
  EXPECT_NE(message("json.safetensors", "wpe.weight").find("not a JSON object"), std::string::npos);
  EXPECT_NE(message("missing.safetensors", "wpe.weight").find("missing.safetensors"), std::string::npos);
}

// A damaged table inside a run's snapshots/ (beside its index) is the run's, not a file to save again: the hint says
// to restore it or take its line out of the index. The same bytes elsewhere keep the loose table's hint.
TEST(TableIo, ADamagedSnapshotOfARunSaysHowToReadTheRunWithoutIt) {
  TempDir dir;
  std::filesystem::create_directories(dir / "run/snapshots");
  write_text(dir / "run/snapshots/index.jsonl", "");
  write_text(dir / "run/snapshots/wpe_step000010.npy", "\x93NUMPY cut");
  write_text(dir / "loose.npy", "\x93NUMPY cut");
  const auto hint = [](const std::string& path) {
    try {
      read_npy_table(path);
    } catch (const Error& e) {
      return e.hint();
    }
    return std::string("no error");
  };
  EXPECT_EQ(hint(dir / "run/snapshots/wpe_step000010.npy"),
            "a snapshot of the run in " + dir / "run" +
                ", damaged since it was written: put it back from a copy of the run, or take its line out of "
                "snapshots/index.jsonl to read the run without it");
  EXPECT_EQ(hint(dir / "loose.npy").find("a snapshot of the run"), std::string::npos) << hint(dir / "loose.npy");
}

}  // namespace
}  // namespace poslab
