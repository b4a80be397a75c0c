// poslab export --to hf on this side: the folder reads back as a GPT-2-layout model (poslab's own reader of model
// folders), its weights in GPT-2's layouts, the check file's logits poslab's. The real reader, transformers, checks
// it in tests/export/test_export_hf.sh (the pip leg).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/fmt/fmt.h>

#include <filesystem>
#include <functional>
#include <numeric>

#include "analysis/analysis.h"
#include "analysis/metric_list.h"
#include "data/tokenizer.h"
#include "export/export_hf.h"
#include "export/export_tensorboard.h"
#include "extend/extend.h"
#include "formats/proto_wire.h"
#include "formats/safetensors.h"
#include "formats/spm_model.h"
#include "load/loaded_model.h"
#include "load/model_tables.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/tiny_run.h"
#include "util/fs.h"

namespace poslab {
namespace {

using test::TempDir;

TEST(ExportHf, AFolderInGpt2sLayoutWithPoslabsLogits) {
  TempDir dir;
  TrainRequest req = test::tiny_run(dir, "run", 2);
  req.overrides.push_back("model.bias=false");
  req.overrides.push_back("train.position_lr_scale=30");
  req.overrides.push_back("train.decay_position_table=false");
  req.overrides.push_back("model.wpe_init_std=0.05");
  train(req);
  const std::string ckpt = dir / "run/checkpoints/latest.pt";
  const HfExport e = export_hf(ckpt, dir / "hf");
  EXPECT_EQ(e.files.size(), 7u);  // config, weights, tokenizer.model and .json and its config, the check, the card
  EXPECT_TRUE(e.warnings.empty());
  LoadedModel m = load_model(ckpt);

  const ModelFolder f = open_model_folder(dir / "hf");
  EXPECT_EQ(f.config["model_type"], "gpt2");
  EXPECT_EQ(f.config["n_positions"], 16);
  EXPECT_EQ(f.config["activation_function"], "gelu");
  EXPECT_TRUE(f.config["eos_token_id"].is_null());  // generate() runs across new lines, as poslab sample
  EXPECT_TRUE(f.config["bos_token_id"].is_null());
  const auto tokenizer = nlohmann::json::parse(read_file(dir / "hf/tokenizer.json"));
  EXPECT_EQ(tokenizer["model"]["type"], "BPE");  // a char model: BPE without merges
  EXPECT_TRUE(tokenizer["model"]["merges"].empty());
  EXPECT_EQ(nlohmann::json::parse(read_file(dir / "hf/tokenizer_config.json"))["tokenizer_class"],
            "PreTrainedTokenizerFast");
  // The card: Hugging Face's metadata block, then what the model is, with the table's verdict from the run's snapshots.
  const std::string card = read_file(dir / "hf/README.md");
  EXPECT_EQ(card.rfind("---\nlibrary_name: transformers\npipeline_tag: text-generation\ntags:\n- poslab\n", 0), 0u)
      << card;
  EXPECT_NE(card.find("datasets:\n- \"corpus\"\n---\n"), std::string::npos) << card;
  EXPECT_NE(card.find("| steps | 2 of batch 16 × 16 tokens |"), std::string::npos) << card;
  EXPECT_NE(card.find("| tokens seen | 512 |"), std::string::npos) << card;
  EXPECT_NE(
      card.find("| the position table's training | learning rate × 30 (`train.position_lr_scale`); no weight "
                "decay (`train.decay_position_table: false`); initialised N(0, 0.05²) (`model.wpe_init_std`) |\n"),
      std::string::npos)
      << card;
  // Its example starts from a new line, as poslab sample does, whatever the corpus.
  EXPECT_NE(card.find("ids = tok(\"\\n\", return_tensors=\"pt\").input_ids\n"), std::string::npos) << card;
  EXPECT_NE(card.find("snapshots from step 0 to step 2. Verdict: **"), std::string::npos) << card;
  EXPECT_NE(card.find("trained from random initial values with the rest of the model"), std::string::npos) << card;
  // Its parameters, poslab's and as transformers counts them: GPT-2's layout holds the zero biases (in the tiny
  // model's thousands: "12.3k").
  const ModelFolder exported = open_model_folder(dir / "hf");
  int64_t in_layout = 0, own = 0;
  for (const auto& [name, t] : exported.tensors)
    in_layout += std::accumulate(t.entry.shape.begin(), t.entry.shape.end(), int64_t{1}, std::multiplies<>());
  for (const auto& p : m.model->parameters()) own += p.numel();
  ASSERT_GT(in_layout, own);
  ASSERT_TRUE(own >= 1000 && in_layout < 1000000) << own << " " << in_layout;
  const auto k = [](int64_t n) { return fmt::format("{:.1f}k", static_cast<double>(n) / 1e3); };
  EXPECT_NE(card.find("model of " + k(own) + " parameters (" + k(in_layout) +
                      " as transformers counts them, with zero biases) trained"),
            std::string::npos)
      << card;
  // An extension's card: its steps were taken at the 16 rows it came from, and its new rows never trained.
  ExtendRequest ext;
  ext.checkpoint = ckpt;
  ext.to = 24;
  export_hf(extend_checkpoint(ext).checkpoint, dir / "hf_extended");
  const std::string extended = read_file(dir / "hf_extended/README.md");
  EXPECT_NE(extended.find("| context (the table's rows) | 24, extended from 16 by linear |"), std::string::npos)
      << extended;
  EXPECT_NE(extended.find("| steps | 2 of batch 16 × 16 tokens |"), std::string::npos) << extended;
  EXPECT_NE(extended.find("| tokens seen | 512 |"), std::string::npos) << extended;
  EXPECT_NE(extended.find("trained at 16 positions with the rest of the model, then stretched to 24 rows by `poslab "
                          "extend` (linear): its rows 16–23 were not trained"),
            std::string::npos)
      << extended;
  const ModelTables t = find_position_tables(f.config, tensor_shapes(f));
  EXPECT_EQ(t.layout, "gpt2");
  ASSERT_EQ(t.tables.size(), 1u);
  EXPECT_EQ(t.tables[0].tensor, "transformer.wpe.weight");
  EXPECT_TRUE(torch::equal(read_model_tensor(f, "transformer.wpe.weight"), m.model->wpe->weight.to(torch::kFloat64)));
  // Conv1D layouts: (in, out), the transpose of poslab's Linear weights; no biases trained: zeros.
  auto* block = m.model->h[0]->as<BlockImpl>();
  EXPECT_TRUE(torch::equal(read_model_tensor(f, "transformer.h.0.attn.c_attn.weight"),
                           block->attn->c_attn->weight.t().to(torch::kFloat64)));
  EXPECT_EQ(f.tensors.at("transformer.h.0.mlp.c_fc.weight").entry.shape, (std::vector<int64_t>{32, 128}));
  // Every weight, each where transformers reads it: the blocks' products transposed (a square one's shape does not
  // tell), the layer norms as they are.
  int compared = 0;
  for (const auto& p : m.model->named_parameters()) {
    const std::string& name = p.key();
    const bool conv1d =
        p.value().dim() == 2 && (name.find(".attn.") != std::string::npos || name.find(".mlp.") != std::string::npos);
    const torch::Tensor want = (conv1d ? p.value().t() : p.value()).to(torch::kFloat64);
    ASSERT_TRUE(f.tensors.count("transformer." + name)) << name;
    EXPECT_TRUE(torch::equal(read_model_tensor(f, "transformer." + name), want)) << name;
    ++compared;
  }
  EXPECT_GE(compared, 9) << "wte, wpe, ln_1, c_attn, c_proj, ln_2, c_fc, mlp's c_proj, ln_f";
  EXPECT_EQ(read_model_tensor(f, "transformer.h.0.attn.c_attn.bias").abs().sum().item<double>(), 0.0);
  EXPECT_FALSE(f.tensors.count("lm_head.weight"));  // tied to wte
  // The check file: the sample text's ids and poslab's logits on them.
  const std::string bytes = read_file(dir / "hf/poslab_check.safetensors");
  const auto entries = list_safetensors_entries(bytes, "check");
  const auto& ids = entries.at("input_ids");
  EXPECT_EQ(ids.shape, (std::vector<int64_t>{1, 16}));  // the text is longer than the 16 positions
  EXPECT_EQ(e.check_tokens, 16);
  const ModelFolder check = open_model_folder(dir / "hf/poslab_check.safetensors");
  const auto idx = read_model_tensor(check, "input_ids").to(torch::kInt64);
  const std::vector<int> expected = m.tokenizer.encode(kExportCheckText);
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(idx[0][i].item<int64_t>(), expected[static_cast<size_t>(i)]);
  // The tokenizer's check texts, whole: poslab's ids of each.
  for (size_t i = 0; i < kTokenizerCheckTexts.size(); ++i) {
    const auto t = read_model_tensor(check, "ids_" + std::to_string(i)).to(torch::kInt64)[0];
    const std::vector<int> want = m.tokenizer.encode(kTokenizerCheckTexts[i]);
    ASSERT_EQ(t.size(0), static_cast<int64_t>(want.size()));
    for (int64_t k = 0; k < t.size(0); ++k) EXPECT_EQ(t[k].item<int64_t>(), want[static_cast<size_t>(k)]);
  }
  torch::NoGradGuard no_grad;
  m.model->eval();
  EXPECT_TRUE(torch::allclose(read_model_tensor(check, "logits"), m.model->forward(idx).to(torch::kFloat64), 0, 1e-6));
}

// The card of a checkpoint earlier than the run's end (a best.pt, a copy kept at some step): its verdict reads the
// snapshots up to that step, its numbers are the exported table's own.
TEST(ExportHf, TheCardDescribesTheExportedTableNotTheRunsLast) {
  TempDir dir;
  train(test::tiny_run(dir, "run", 2));
  const std::string kept = dir / "run/checkpoints/step2.pt";
  std::filesystem::copy_file(dir / "run/checkpoints/latest.pt", kept);
  TrainRequest on;
  on.resume_dir = dir / "run";
  on.overrides = {"train.max_steps=4"};
  train(on);
  export_hf(kept, dir / "hf");
  const std::string card = read_file(dir / "hf/README.md");
  EXPECT_NE(card.find("snapshots from step 0 to step 2. Verdict: **"), std::string::npos) << card;
  EXPECT_EQ(card.find("to step 4"), std::string::npos) << card;
  const Analysis exported = analyze_table(read_checkpoint_position_table(kept), kept);
  EXPECT_NE(card.find("| the exported table (step 2) | |\n"), std::string::npos) << card;
  for (const Metric& k : headline_metrics())
    EXPECT_NE(card.find(std::string("| ") + k.label + " | " + format_metric(k, exported) + " |\n"), std::string::npos)
        << k.label << "\n"
        << card;
}

// An export into a folder an earlier one filled (--force) leaves none of that one's files that it does not write
// itself: its figures, a tokenizer.json transformers would read in place of this export's tokenizer.model.
// A sentencepiece model from elsewhere (data.tokenizer.model): one whose normaliser tokenizer.json cannot state (a
// dummy prefix) is exported for LlamaTokenizer, one without poslab's newline piece with its tokenizer.json; each with
// a warning that says how transformers' ids differ from poslab's.
TEST(ExportHf, ATokenizerFromElsewhereIsExportedWithAWarningSayingHowItsIdsDiffer) {
  TempDir dir;
  test::write_text(dir / "corpus.txt", test::generated_corpus(2000));
  const std::string own = Tokenizer::train(dir / "corpus.txt", dir / "own", "char", 400, 1);
  // normalizer_spec (field 3) { add_dummy_prefix (field 3): true }: the byte of its varint, false as poslab trains.
  std::string prefixed = own;
  size_t spec_at = 0, spec_size = 0;
  proto::for_each_field(own, [&](int f, int w, size_t p, uint64_t n) {
    if (f == 3 && w == 2) spec_at = p, spec_size = static_cast<size_t>(n);
  });
  bool flipped = false;
  proto::for_each_field(own.substr(spec_at, spec_size), [&](int f, int w, size_t p, uint64_t n) {
    if (f == 3 && w == 0 && n == 0) prefixed[spec_at + p - 1] = 1, flipped = true;
  });
  ASSERT_TRUE(flipped);
  ASSERT_TRUE(read_spm_model(prefixed, "prefixed.model").add_dummy_prefix);
  std::string renamed = own;  // U+2424 renamed U+2425: no newline piece
  for (size_t at = renamed.find(kNewlinePiece); at != std::string::npos; at = renamed.find(kNewlinePiece, at + 3))
    renamed[at + 2] = '\xA5';
  auto exported = [&](const std::string& name, const std::string& model) {
    test::write_text(dir / (name + ".model"), model);
    TrainRequest req = test::tiny_run(dir, name, 1);
    req.overrides.push_back("data.tokenizer.model=" + (dir / (name + ".model")));
    train(req);
    return export_hf(dir / (name + "/checkpoints/latest.pt"), dir / ("hf_" + name));
  };
  const HfExport p = exported("prefixed", prefixed);
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("latest.pt: the tokenizer has no tokenizer.json form (its dummy prefix "
                               "(add_dummy_prefix)): transformers reads tokenizer.model with LlamaTokenizer, whose ids "
                               "differ from poslab's"),
            std::string::npos)
      << p.warnings[0];
  EXPECT_FALSE(std::filesystem::exists(dir / "hf_prefixed/tokenizer.json"));
  EXPECT_EQ(nlohmann::json::parse(read_file(dir / "hf_prefixed/tokenizer_config.json"))["tokenizer_class"],
            "LlamaTokenizer");
  const HfExport r = exported("renamed", renamed);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find(std::string("latest.pt: the tokenizer has no newline piece ") + kNewlinePiece +
                               ": poslab encodes a new line as a space"),
            std::string::npos)
      << r.warnings[0];
  EXPECT_TRUE(std::filesystem::exists(dir / "hf_renamed/tokenizer.json"));
  EXPECT_EQ(nlohmann::json::parse(read_file(dir / "hf_renamed/tokenizer_config.json"))["poslab_newline_id"], -1);
}

TEST(ExportHf, AnExportOverAnotherLeavesNoneOfItsFiles) {
  TempDir dir;
  train(test::tiny_run(dir, "drawn", 2));
  std::filesystem::create_directories(dir / "drawn/report");
  test::write_text(dir / "drawn/report/similarity.png", "figure\n");
  EXPECT_EQ(export_hf(dir / "drawn/checkpoints/latest.pt", dir / "hf").files.size(), 8u);
  EXPECT_TRUE(std::filesystem::exists(dir / "hf/similarity.png"));
  train(test::tiny_run(dir, "plain", 2));
  test::write_text(dir / "hf/notes.txt", "mine\n");
  export_hf(dir / "plain/checkpoints/latest.pt", dir / "hf");
  EXPECT_FALSE(std::filesystem::exists(dir / "hf/similarity.png"));
  EXPECT_TRUE(std::filesystem::exists(dir / "hf/tokenizer.json"));
  EXPECT_EQ(read_file(dir / "hf/notes.txt"), "mine\n");
}

// A run without a position table (model.position: none) snapshots nothing: its curves go to TensorBoard alone.
TEST(ExportTensorboard, ARunWithoutATableExportsItsCurves) {
  TempDir dir;
  TrainRequest req = test::tiny_run(dir, "none", 2);
  req.overrides.push_back("model.position=none");
  train(req);
  const TensorboardExport r = export_tensorboard(dir / "none", dir / "tb");
  EXPECT_GT(r.scalars, 0);
  EXPECT_EQ(r.snapshots, 0);
  EXPECT_TRUE(std::filesystem::exists(r.events_file));
  EXPECT_FALSE(std::filesystem::exists(dir / "tb/projector_config.pbtxt"));
  // Its model card calls it a control, with no table to watch, and counts the table of zeros GPT-2's layout holds.
  export_hf(dir / "none/checkpoints/latest.pt", dir / "hf");
  const std::string card = read_file(dir / "hf/README.md");
  EXPECT_NE(card.find(" as transformers counts them, with a position table of zeros) trained by poslab as a control "
                      "beside models whose position table is learned. Its only source of word order is no position "
                      "table"),
            std::string::npos)
      << card;
}

TEST(ExportHf, SafetensorsFilesReadBackAndBadSizesAreErrors) {
  const std::string f = safetensors_file(
      {{"a", "F32", {2, 3}, std::string(24, '\1')}, {"b", "I64", {1}, std::string(8, '\2')}}, {{"note", "x"}});
  EXPECT_EQ(f.size() % 8, 0u);  // header padded: the data starts 8-byte aligned
  const auto e = list_safetensors_entries(f, "f");
  EXPECT_EQ(e.at("a").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.substr(e.at("b").offset, 8), std::string(8, '\2'));
  const std::string msg = test::error_of([] { safetensors_file({{"a", "F32", {2}, "abc"}}); });
  EXPECT_NE(msg.find("tensor 'a' has 3 bytes, its shape and F32 need 8"), std::string::npos) << msg;
}

}  // namespace
}  // namespace poslab
