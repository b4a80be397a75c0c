// poslab extend: the five methods against their definitions, the extended checkpoint end to end, and
// poslab train --init-from / train.trainable.
#include <gtest/gtest.h>

#include <filesystem>

#include "analysis/table_io.h"
#include "config/config.h"
#include "data/dataset.h"
#include "extend/extend.h"
#include "formats/npy.h"
#include "load/loaded_model.h"
#include "model/sample.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/evaluate.h"
#include "train/optim.h"
#include "train/tiny_run.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/fs.h"

namespace poslab {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::tiny_run;

torch::Tensor linear_table(int64_t T, int64_t C) {  // w_i = a + i·b
  const auto a = torch::linspace(-1, 1, C, torch::kFloat64), b = torch::linspace(0.5, -0.25, C, torch::kFloat64);
  return a.unsqueeze(0) + torch::arange(T, torch::kFloat64).unsqueeze(1) * b.unsqueeze(0);
}

TEST(ExtendTable, LinearReproducesALinearTableAndKeepsTheEndpoints) {
  const auto W = linear_table(16, 6);
  const auto out = extend_table(W, 61, "linear");
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{61, 6}));
  for (int64_t j = 0; j < 61; ++j) {
    const double x = j * 15.0 / 60.0;  // the new row's old position
    const auto want = linear_table(16, 6)[0] + x * (linear_table(16, 6)[1] - linear_table(16, 6)[0]);
    EXPECT_TRUE(torch::allclose(out[j], want, 1e-12, 1e-12)) << "row " << j;
  }
  EXPECT_TRUE(torch::equal(out[0], W[0]));
  EXPECT_TRUE(torch::equal(out[60], W[15]));
}

TEST(ExtendTable, LinearInterpolatesBetweenTheTwoNearestRows) {
  torch::manual_seed(1);
  const auto W = torch::randn({5, 3}, torch::kFloat64);
  const auto out = extend_table(W, 9, "linear");  // x_j = j/2: rows, and midpoints between them
  for (int64_t k = 0; k < 5; ++k) EXPECT_TRUE(torch::allclose(out[2 * k], W[k], 1e-12, 1e-12));
  for (int64_t k = 0; k < 4; ++k) EXPECT_TRUE(torch::allclose(out[2 * k + 1], (W[k] + W[k + 1]) / 2, 1e-12, 1e-12));
}

TEST(ExtendTable, CubicPassesThroughTheRowsAndIsExactOnLinearTables) {
  torch::manual_seed(2);
  const auto W = torch::randn({16, 4}, torch::kFloat64);
  const auto out = extend_table(W, 31, "cubic");  // x_j = j/2
  for (int64_t k = 0; k < 16; ++k) EXPECT_TRUE(torch::allclose(out[2 * k], W[k], 1e-12, 1e-12)) << k;
  // Catmull-Rom at an interior midpoint: (−w_{k−1} + 9 w_k + 9 w_{k+1} − w_{k+2}) / 16.
  const auto mid = (-W[4] + 9 * W[5] + 9 * W[6] - W[7]) / 16;
  EXPECT_TRUE(torch::allclose(out[11], mid, 1e-12, 1e-12));
  // At the ends the tangent is one-sided (w_1 − w_0, w_{T−1} − w_{T−2}): the midpoint between rows 0 and 1 is
  // (7 w_0 + 10 w_1 − w_2) / 16, between rows 14 and 15 (−w_13 + 10 w_14 + 7 w_15) / 16.
  EXPECT_TRUE(torch::allclose(out[1], (7 * W[0] + 10 * W[1] - W[2]) / 16, 1e-12, 1e-12)) << out[1] << W.slice(0, 0, 3);
  EXPECT_TRUE(torch::allclose(out[29], (-W[13] + 10 * W[14] + 7 * W[15]) / 16, 1e-12, 1e-12));
  EXPECT_TRUE(torch::allclose(extend_table(linear_table(16, 6), 61, "cubic"),
                              extend_table(linear_table(16, 6), 61, "linear"), 1e-12, 1e-12));
}

TEST(ExtendTable, NearestAndCopyMatchTheirDefinitions) {
  torch::manual_seed(3);
  const auto W = torch::randn({7, 3});
  const auto nearest = extend_table(W, 20, "nearest");
  const auto copy = extend_table(W, 20, "copy");
  for (int64_t j = 0; j < 20; ++j) {
    const double x = j * 6.0 / 19.0;
    EXPECT_TRUE(torch::equal(nearest[j], W[static_cast<int64_t>(std::floor(x + 0.5))])) << "nearest row " << j;
    EXPECT_TRUE(torch::equal(copy[j], W[j % 7])) << "copy row " << j;
  }
  EXPECT_EQ(copy.scalar_type(), torch::kFloat32) << "the table keeps its dtype";
  // Halves round up: 3 rows to 5 puts new rows at 0, 0.5, 1, 1.5, 2, which take rows 0, 1, 1, 2, 2.
  const auto R = torch::arange(6, torch::kFloat64).view({3, 2});
  EXPECT_TRUE(torch::equal(extend_table(R, 5, "nearest"), R.index_select(0, torch::tensor({0, 1, 1, 2, 2}))))
      << extend_table(R, 5, "nearest");
}

// The last new row is the last old row exactly, where x_{N−1} = (N − 1)·((T − 1)/(N − 1)) rounds below T − 1
// (T 2, N 50: 0.9999999999999999).
TEST(ExtendTable, TheLastRowIsTheLastTrainedRowExactly) {
  torch::manual_seed(5);
  const auto W = torch::randn({2, 8}, torch::kFloat64);
  for (const char* method : {"linear", "cubic", "nearest"}) {
    const auto out = extend_table(W, 50, method);
    EXPECT_TRUE(torch::equal(out[49], W[1])) << method << ": " << (out[49] - W[1]);
    EXPECT_TRUE(torch::equal(out[0], W[0])) << method;
  }
}

TEST(ExtendTable, RandomKeepsTheTrainedRowsAndDrawsTheRestAsAtStepZero) {
  torch::manual_seed(4);
  const auto W = torch::randn({16, 64});
  const auto a = extend_table(W, 416, "random", 0.02, 9), b = extend_table(W, 416, "random", 0.02, 9);
  ASSERT_EQ(a.sizes(), (std::vector<int64_t>{416, 64})) << "the 16 trained rows and 400 drawn";
  EXPECT_TRUE(torch::equal(a.slice(0, 0, 16), W));
  EXPECT_TRUE(torch::equal(a, b)) << "the same seed draws the same rows";
  EXPECT_FALSE(torch::equal(a, extend_table(W, 416, "random", 0.02, 10)));
  EXPECT_NEAR(a.slice(0, 16).std().item<double>(), 0.02, 0.001);
  EXPECT_NEAR(a.slice(0, 16).mean().item<double>(), 0.0, 0.001);
}

TEST(ExtendTable, BadRequestsAreErrorsNamingTheOption) {
  const auto W = torch::zeros({8, 2});
  try {
    extend_table(W, 8, "linear");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--to 8"), std::string::npos) << e.what();
  }
  try {
    extend_table(W, 16, "spline");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--method spline"), std::string::npos) << e.what();
  }
}

// One tiny trained run, shared by the tests below (seconds).
class ExtendCheckpoint : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    train(tiny_run(*dir_, "base", 20));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string base() { return *dir_ / "base/checkpoints/latest.pt"; }
  static TempDir* dir_;
};
TempDir* ExtendCheckpoint::dir_ = nullptr;

TEST_F(ExtendCheckpoint, LoadsSamplesAndEvaluatesAtTheNewLength) {
  ExtendRequest req;
  req.checkpoint = base();
  req.to = 40;
  req.method = "linear";
  const ExtendResult r = extend_checkpoint(req);
  EXPECT_EQ(r.checkpoint, (fs::path(*dir_ / "base") / "extend" / "40-linear" / "checkpoint.pt").string());
  EXPECT_TRUE(fs::exists(r.extension_json));

  LoadedModel before = load_model(base());
  LoadedModel after = load_model(r.checkpoint);
  EXPECT_EQ(after.cfg.model.block_size, 40);
  EXPECT_EQ(after.cfg.model.extended_from, 16);
  EXPECT_EQ(after.cfg.model.extend_method, "linear");
  EXPECT_EQ(after.cfg.run.name, "base-ext40-linear");
  EXPECT_EQ(after.meta.step, before.meta.step);
  EXPECT_EQ(after.meta.tokenizer_model, before.meta.tokenizer_model);
  EXPECT_TRUE(std::isnan(after.meta.val_loss)) << "a loss measured at 16 positions does not describe 40";
  EXPECT_TRUE(torch::equal(after.model->position_table(), extend_table(before.model->position_table(), 40, "linear")));
  // The table beside the checkpoint (what the report draws) is the checkpoint's own, in float32.
  EXPECT_EQ(r.table_npy, (fs::path(*dir_ / "base") / "extend" / "40-linear" / "checkpoint.wpe.npy").string());
  EXPECT_TRUE(
      torch::equal(read_npy_table(r.table_npy).to(torch::kFloat32), after.model->position_table().to(torch::kFloat32)));
  const auto old_params = before.model->named_parameters();
  for (const auto& p : after.model->named_parameters())
    if (p.key() != "wpe.weight") {
      EXPECT_TRUE(torch::equal(p.value(), old_params[p.key()])) << p.key();
    }

  // Evaluates with windows of 40 and scores every position.
  const TokenData data = prepare_tokens(after.cfg, 1, &after.tokenizer);
  const PositionLoss loss = evaluate_positions(after.model, data.val, 2, 4, 1, false, torch::kCPU);
  ASSERT_EQ(loss.by_position.size(), 40u);
  for (double v : loss.by_position) EXPECT_TRUE(std::isfinite(v));
  // Samples past the old block_size: 30 new tokens on a 5-token prompt feed contexts of up to 35 positions.
  SampleOptions opt;
  opt.tokens = 30;
  EXPECT_EQ(generate(after.model, {1, 2, 3, 4, 5}, opt).size(), 35u);

  // It continues no run: no optimizer state, and the error says what to do instead.
  GPT model(after.cfg.model, after.tokenizer.vocab_size());
  auto optimizer = make_optimizer(model, after.cfg.train);
  try {
    load_checkpoint(r.checkpoint, model, optimizer.get());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.hint()).find("--init-from"), std::string::npos) << e.hint();
  }
  // Never over an existing file without --force: not the checkpoint, nor the table or record beside it alone, each
  // left as it was; with --force all three are written anew.
  const std::string ckpt_bytes = read_file(r.checkpoint), npy_bytes = read_file(r.table_npy);
  EXPECT_EQ(test::error_of([&] { extend_checkpoint(req); }),
            "the extension " + r.checkpoint + ": already exists | name a new file, or pass --force to replace it");
  fs::remove(r.checkpoint);
  EXPECT_EQ(test::error_of([&] { extend_checkpoint(req); }),
            "the extension's table or record beside it, " + r.table_npy +
                ": already exists | name a new file, or pass --force to replace it");
  EXPECT_EQ(read_file(r.table_npy), npy_bytes);
  EXPECT_FALSE(fs::exists(r.checkpoint));
  fs::remove(r.table_npy);
  const std::string json_bytes = read_file(r.extension_json);
  EXPECT_EQ(test::error_of([&] { extend_checkpoint(req); }),
            "the extension's table or record beside it, " + r.extension_json +
                ": already exists | name a new file, or pass --force to replace it");
  EXPECT_EQ(read_file(r.extension_json), json_bytes);
  req.force = true;
  EXPECT_NO_THROW(extend_checkpoint(req));
  EXPECT_EQ(read_file(r.table_npy), npy_bytes) << "the same extension, written anew";
  EXPECT_TRUE(fs::exists(r.checkpoint));
  EXPECT_EQ(read_file(r.checkpoint).size(), ckpt_bytes.size());
}

TEST_F(ExtendCheckpoint, InitFromCarriesTheWeightsAndNothingElse) {
  ExtendRequest ext;
  ext.checkpoint = base();
  ext.to = 32;
  ext.method = "copy";
  const std::string extended = extend_checkpoint(ext).checkpoint;

  TrainRequest req = tiny_run(*dir_, "unused", 6);
  req.overrides = {"run.out_dir=" + dir_->str(), "run.threads=2",      "run.device=cpu",  "train.max_steps=6",
                   "train.trainable=wpe",        "train.eval_every=3", "snapshot.every=3"};
  req.init_from = extended;
  const TrainSummary s = train(req);
  EXPECT_EQ(s.run_dir, *dir_ / "base-ext32-copy") << "the extension names the new run";
  EXPECT_EQ(s.steps, 6) << "the step starts at 0, not at the source's";

  const LoadedModel start = load_model(extended);
  const LoadedModel end = load_model(s.run_dir + "/checkpoints/latest.pt");
  EXPECT_EQ(end.cfg.train.init_from, fs::absolute(extended).lexically_normal().string());
  EXPECT_EQ(end.meta.step, 6);
  // Step 0's snapshot is the extended table; only the table trained.
  const NpyArray w0 = read_npy(s.run_dir + "/snapshots/wpe_step000000.npy");
  const auto table0 = start.model->position_table().to(torch::kFloat64).flatten();
  ASSERT_EQ(w0.shape, (std::vector<int64_t>{32, 32}));
  EXPECT_TRUE(torch::allclose(torch::tensor(w0.data, torch::kFloat64), table0, 0, 1e-7));
  EXPECT_FALSE(torch::equal(end.model->position_table(), start.model->position_table()));
  const auto start_params = start.model->named_parameters();
  for (const auto& p : end.model->named_parameters())
    if (p.key() != "wpe.weight") {
      EXPECT_TRUE(torch::equal(p.value(), start_params[p.key()])) << p.key() << " trained";
    }
  // The optimizer knows the table alone: its state is fresh, not the source's.
  GPT model(end.cfg.model, end.tokenizer.vocab_size());
  set_trainable(model, "wpe");
  auto optimizer = make_optimizer(model, end.cfg.train);
  load_checkpoint(s.run_dir + "/checkpoints/latest.pt", model, optimizer.get());
  EXPECT_EQ(optimizer->state().size(), 1u);

  // The run trained from the extension is extended as any trained run: all its 32 rows trained. The extension
  // itself is not (its rows 16-31 never trained): the error names the checkpoint to extend instead.
  ExtendRequest again;
  again.checkpoint = s.run_dir + "/checkpoints/latest.pt";
  again.to = 48;
  const LoadedModel twice = load_model(extend_checkpoint(again).checkpoint);
  EXPECT_EQ(twice.cfg.model.extended_from, 32);
  EXPECT_EQ(twice.cfg.train.init_from, "") << "an extension is no run started from another's weights";
  again.checkpoint = extended;
  try {
    extend_checkpoint(again);
    FAIL() << "an extension not trained since was extended";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), extended +
                                         ": is itself an extension, from 16 to 32 positions by copy, not trained "
                                         "since: its rows 16-31 were never trained");
    EXPECT_EQ(e.hint(), "extend the trained model instead: poslab extend " +
                            fs::absolute(base()).lexically_normal().string() +
                            " --to 48 --method linear; or train this one first: poslab train --init-from " + extended);
  }
  // The hint is the command given, but for the source: its seed, out and force kept.
  again.method = "random";
  again.seed = 7;
  again.out = "x y.pt";
  again.force = true;
  try {
    extend_checkpoint(again);
    FAIL() << "an extension not trained since was extended";
  } catch (const Error& e) {
    EXPECT_EQ(e.hint(), "extend the trained model instead: poslab extend " +
                            fs::absolute(base()).lexically_normal().string() +
                            " --to 48 --method random --seed 7 --out 'x y.pt' --force; or train this one first: "
                            "poslab train --init-from " +
                            extended);
  }

  // Everything trains with train.trainable all.
  req.overrides.push_back("run.name=all");
  req.overrides.push_back("train.trainable=all");
  const TrainSummary all = train(req);
  const LoadedModel all_end = load_model(all.run_dir + "/checkpoints/latest.pt");
  const auto all_params = all_end.model->named_parameters();
  EXPECT_FALSE(torch::equal(all_params["h.0.mlp.c_fc.weight"], start_params["h.0.mlp.c_fc.weight"]));
}

// --out a bare file name: written in the current folder.
TEST_F(ExtendCheckpoint, AnOutWithoutAFolderIsWrittenHere) {
  const fs::path here = fs::current_path();
  fs::current_path(dir_->str());
  ExtendRequest req;
  req.checkpoint = base();
  req.to = 20;
  req.out = "bare.pt";
  std::string error;
  try {
    extend_checkpoint(req);
  } catch (const Error& e) {
    error = e.what();
  }
  fs::current_path(here);
  EXPECT_EQ(error, "");
  EXPECT_TRUE(fs::is_regular_file(*dir_ / "bare.pt"));
  EXPECT_TRUE(fs::is_regular_file(*dir_ / "bare.wpe.npy"));
}

TEST_F(ExtendCheckpoint, InitFromErrorsNameTheKey) {
  TrainRequest req = tiny_run(*dir_, "bad", 2);
  req.overrides.push_back("train.init_from=" + (*dir_ / "nowhere.pt"));
  try {
    train(req);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train.init_from"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nowhere.pt"), std::string::npos) << e.what();
  }
  // Weights of another shape: the architecture difference is named.
  TrainRequest wide = tiny_run(*dir_, "wide", 2);
  wide.overrides.push_back("model.n_embd=64");
  wide.overrides.push_back("train.init_from=" + base());
  try {
    train(wide);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.n_embd"), std::string::npos) << e.what();
  }
  // Only a learned table can train alone.
  TrainRequest none = tiny_run(*dir_, "none", 2);
  none.overrides.push_back("model.position=none");
  none.overrides.push_back("train.trainable=wpe");
  EXPECT_THROW(train(none), Error);
}

}  // namespace
}  // namespace poslab
