#include "export/export_hf.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "export/hf_tokenizer.h"
#include "export/model_card.h"
#include "formats/safetensors.h"
#include "formats/spm_model.h"
#include "load/loaded_model.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_text.h"

namespace poslab {
namespace fs = std::filesystem;

const char* const kExportCheckText =
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\tAll: Speak, speak! — café ✓\n";

const std::vector<std::string> kTokenizerCheckTexts = {
    kExportCheckText, "line one\n\nline three, after an empty line\n",
    "\n\nnew lines first, then  two  spaces,\ttabs\t and a space at the end \n ",
    "digits 0123456789, a literal <0x41>, <unk> and \xE2\x90\xA4 (poslab's newline piece, typed)",
    "outside the corpus: \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x99\x82 \xC3\xBC\r\n\x01"};

namespace {

// A float32 tensor's bytes, C order.
SafetensorsTensor f32(const std::string& name, const torch::Tensor& t) {
  const auto c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  return {name, "F32", c.sizes().vec(),
          std::string(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel()) * sizeof(float))};
}

// GPT-2's names and layouts: Conv1D weights are stored (in, out), the transpose of a Linear's (out, in).
std::vector<SafetensorsTensor> gpt2_tensors(GPT& model) {
  const auto& cfg = model->cfg;
  const int64_t C = cfg.n_embd;
  auto bias_or_zeros = [](const torch::Tensor& b, int64_t n) { return b.defined() ? b : torch::zeros({n}); };
  std::vector<SafetensorsTensor> out;
  out.push_back(f32("transformer.wte.weight", model->wte->weight));
  out.push_back(f32("transformer.wpe.weight", model->wpe ? model->wpe->weight : torch::zeros({cfg.block_size, C})));
  auto layer_norm = [&](const std::string& name, const LayerNorm& ln) {
    out.push_back(f32(name + ".weight", ln->weight));
    out.push_back(f32(name + ".bias", bias_or_zeros(ln->bias, C)));
  };
  auto conv1d = [&](const std::string& name,
                    const torch::nn::Linear& l) {  // GPT-2's Conv1D: the Linear's weight transposed
    out.push_back(f32(name + ".weight", l->weight.t()));
    out.push_back(f32(name + ".bias", bias_or_zeros(l->bias, l->weight.size(0))));
  };
  for (size_t i = 0; i < model->h->size(); ++i) {
    auto* b = model->h[i]->as<BlockImpl>();
    const std::string p = "transformer.h." + std::to_string(i) + ".";
    layer_norm(p + "ln_1", b->ln_1);
    conv1d(p + "attn.c_attn", b->attn->c_attn);
    conv1d(p + "attn.c_proj", b->attn->c_proj);
    layer_norm(p + "ln_2", b->ln_2);
    conv1d(p + "mlp.c_fc", b->mlp->c_fc);
    conv1d(p + "mlp.c_proj", b->mlp->c_proj);
  }
  layer_norm("transformer.ln_f", model->ln_f);
  return out;
}

nlohmann::ordered_json gpt2_config(const LoadedModel& m, const std::string& checkpoint) {
  const ModelConfig& c = m.cfg.model;
  return {
      {"architectures", {"GPT2LMHeadModel"}},
      {"model_type", "gpt2"},
      {"vocab_size", m.model->vocab_size},
      {"n_positions", c.block_size},
      {"n_ctx", c.block_size},
      {"n_embd", c.n_embd},
      {"n_layer", c.n_layer},
      {"n_head", c.n_head},
      {"n_inner", 4 * c.n_embd},
      {"activation_function", "gelu"},  // the exact erf form, as poslab's
      {"layer_norm_epsilon", 1e-5},
      {"resid_pdrop", 0.0},
      {"embd_pdrop", 0.0},
      {"attn_pdrop", 0.0},
      {"scale_attn_weights", true},
      {"scale_attn_by_inverse_layer_idx", false},
      {"reorder_and_upcast_attn", false},
      {"tie_word_embeddings", true},
      // No piece poslab writes text with ends or starts a text: generate() runs for max_new_tokens, as poslab sample.
      {"bos_token_id", nullptr},
      {"eos_token_id", nullptr},
      {"torch_dtype", "float32"},
      {"poslab",
       {{"checkpoint", checkpoint},
        {"step", m.meta.step},
        {"position", c.position},
        {"bias", c.bias},
        {"tokenizer", m.cfg.data.tokenizer.type}}}};
}

}  // namespace

HfExport export_hf(const std::string& checkpoint, const std::string& dir) {
  LoadedModel m = load_model(checkpoint);
  m.model->eval();
  HfExport r;
  r.dir = dir;
  make_dirs(dir);
  auto write = [&](const std::string& name, const std::string& bytes) {
    const std::string path = (fs::path(dir) / name).string();
    write_file_atomic(path, bytes);
    r.files.push_back(path);
  };
  write("config.json", json_text(gpt2_config(m, checkpoint), 2) + "\n");
  int64_t exported_parameters = 0;
  {
    const std::vector<SafetensorsTensor> tensors = gpt2_tensors(m.model);
    for (const SafetensorsTensor& t : tensors) {
      int64_t n = 1;
      for (const int64_t d : t.shape) n *= d;
      exported_parameters += n;
    }
    write("model.safetensors", safetensors_file(tensors, {{"format", "pt"}}));
  }
  // The tokenizer: sentencepiece's own model, and tokenizer.json, which transformers' fast tokenizer reads and which
  // encodes and decodes as poslab does, new lines included (export/hf_tokenizer.h).
  write("tokenizer.model", m.tokenizer.model_bytes());
  std::string why;
  const SpmModel spm = read_spm_model(m.tokenizer.model_bytes(), checkpoint);
  const nlohmann::ordered_json tokenizer_json = hf_tokenizer_json(spm, kNewlinePiece, &why);
  nlohmann::ordered_json tokenizer_config;
  if (!tokenizer_json.is_null()) {
    write("tokenizer.json", json_text(tokenizer_json, 1) + "\n");
    tokenizer_config = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                        {"unk_token", nullptr},  // "<unk>" typed in a text is its characters, as in poslab
                        {"bos_token", nullptr},
                        {"eos_token", nullptr},
                        {"pad_token", nullptr},
                        {"clean_up_tokenization_spaces", false},
                        {"model_max_length", m.cfg.model.block_size}};
  } else {
    // A sentencepiece model from elsewhere (data.tokenizer.model) whose normaliser tokenizer.json cannot state:
    // LlamaTokenizer reads the model itself, and encodes "\n" as a byte piece (docs/interop.md).
    r.warnings.push_back(checkpoint + ": the tokenizer has no tokenizer.json form (" + why +
                         "): transformers reads tokenizer.model with LlamaTokenizer, "
                         "whose ids differ from poslab's (its own normaliser, a space before a text's first word, a "
                         "new line as the byte piece <0x0A>): feed the model poslab's ids, not LlamaTokenizer's");
    tokenizer_config = {
        {"tokenizer_class", "LlamaTokenizer"}, {"add_bos_token", false}, {"add_eos_token", false},
        {"add_prefix_space", false},           {"legacy", false},        {"model_max_length", m.cfg.model.block_size}};
  }
  if (!tokenizer_json.is_null() && m.tokenizer.newline_id() < 0)  // a model from elsewhere without poslab's piece
    r.warnings.push_back(checkpoint + ": the tokenizer has no newline piece " + kNewlinePiece +
                         ": poslab encodes a new line as a space, between lines encoded apart, which tokenizer.json "
                         "cannot state; it encodes one as the bytes of " +
                         kNewlinePiece + ", so texts with new lines tokenize otherwise in transformers");
  tokenizer_config["poslab_newline_id"] = m.tokenizer.newline_id();
  write("tokenizer_config.json", json_text(tokenizer_config, 2) + "\n");
  // poslab's logits on the sample text (at most block_size tokens), for the check on the other side.
  std::vector<int> ids = m.tokenizer.encode(kExportCheckText);
  if (static_cast<int64_t>(ids.size()) > m.cfg.model.block_size)
    ids.resize(static_cast<size_t>(m.cfg.model.block_size));
  r.check_tokens = static_cast<int64_t>(ids.size());
  const auto idx = torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kInt64).unsqueeze(0);
  torch::Tensor logits;
  {
    torch::NoGradGuard no_grad;
    logits = m.model->forward(idx);
  }
  auto i64 = [](const std::string& name, const std::vector<int>& v) {
    const std::vector<int64_t> w(v.begin(), v.end());
    return SafetensorsTensor{name,
                             "I64",
                             {1, static_cast<int64_t>(w.size())},
                             std::string(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(int64_t))};
  };
  std::vector<SafetensorsTensor> check = {i64("input_ids", ids), f32("logits", logits)};
  std::map<std::string, std::string> meta = {{"text", kExportCheckText}, {"checkpoint", checkpoint}};
  // poslab's ids of the tokenizer's test texts, and its decoding of them (the text itself, but for a literal ␤).
  for (size_t i = 0; i < kTokenizerCheckTexts.size(); ++i) {
    const std::vector<int> t = m.tokenizer.encode(kTokenizerCheckTexts[i]);
    check.push_back(i64("ids_" + std::to_string(i), t));
    meta["text_" + std::to_string(i)] = kTokenizerCheckTexts[i];
    meta["decoded_" + std::to_string(i)] = m.tokenizer.decode(t);
  }
  // <unk>, which no text encodes to (byte fallback) but sampling may draw: first, between pieces and twice running.
  const auto unk = std::find_if(spm.pieces.begin(), spm.pieces.end(),
                                [](const SpmPiece& p) { return p.type == SpmPiece::Type::unknown; });
  if (unk != spm.pieces.end()) {
    const int id = static_cast<int>(unk - spm.pieces.begin());
    std::vector<int> t = m.tokenizer.encode("First Citizen: speak");
    t.insert(t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), {id, id});
    t.insert(t.begin(), id);
    check.push_back(i64("ids_unk", t));
    meta["decoded_unk"] = m.tokenizer.decode(t);
  }
  write("poslab_check.safetensors", safetensors_file(check, meta));
  const ModelCard card = model_card(m, checkpoint, dir, exported_parameters);
  for (const std::string& figure : card.figures) write(fs::path(figure).filename().string(), read_file(figure));
  write("README.md", card.text);
  // An earlier export into this folder (--force) may hold files of poslab's that this one does not write: a
  // tokenizer.json that transformers would read in place of this tokenizer.model, another run's figures. They go.
  std::vector<std::string> names = {"tokenizer.json"};
  for (const CardFigure& f : kCardFigures) names.push_back(std::string(f.stem) + ".png");
  for (const std::string& name : names) {
    const std::string path = (fs::path(dir) / name).string();
    std::error_code ec;
    if (std::find(r.files.begin(), r.files.end(), path) == r.files.end() && fs::remove(path, ec))
      spdlog::info("{}: removed, an earlier export's (this one writes none)", path);
  }
  return r;
}

}  // namespace poslab
