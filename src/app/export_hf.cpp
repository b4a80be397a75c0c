#include "app/export_hf.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <filesystem>

#include "analysis/safetensors.h"
#include "app/loaded_model.h"
#include "util/error.h"
#include "util/fs.h"

namespace poslab {
namespace fs = std::filesystem;

const char* const kExportCheckText = "First Citizen:\nBefore we proceed any further, hear me speak.\n\tAll: Speak, speak! — café ✓\n";

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
  auto conv1d = [&](const std::string& name, const torch::nn::Linear& l) {  // GPT-2's Conv1D: the Linear's weight transposed
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
  return {{"architectures", {"GPT2LMHeadModel"}},
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
          {"bos_token_id", m.tokenizer.newline_id() >= 0 ? m.tokenizer.newline_id() : 0},
          {"eos_token_id", m.tokenizer.newline_id() >= 0 ? m.tokenizer.newline_id() : 0},
          {"torch_dtype", "float32"},
          {"poslab", {{"checkpoint", checkpoint},
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
  write("config.json", gpt2_config(m, checkpoint).dump(2) + "\n");
  write("model.safetensors", safetensors_file(gpt2_tensors(m.model), {{"format", "pt"}}));
  // The tokenizer: sentencepiece's own model, and what transformers needs to read it (docs/interop.md).
  write("tokenizer.model", m.tokenizer.model_bytes());
  // LlamaTokenizer reads any sentencepiece model; without a prefix space, BOS or EOS it encodes a line as poslab does.
  // Between lines poslab puts its newline piece, which transformers cannot be told to make of "\n" (docs/interop.md).
  write("tokenizer_config.json", nlohmann::ordered_json{{"tokenizer_class", "LlamaTokenizer"},
                                                        {"add_bos_token", false},
                                                        {"add_eos_token", false},
                                                        {"add_prefix_space", false},
                                                        {"legacy", false},
                                                        {"model_max_length", m.cfg.model.block_size},
                                                        {"poslab_newline_id", m.tokenizer.newline_id()}}
                                         .dump(2) + "\n");
  // poslab's logits on the sample text (at most block_size tokens), for the check on the other side.
  std::vector<int> ids = m.tokenizer.encode(kExportCheckText);
  if (static_cast<int64_t>(ids.size()) > m.cfg.model.block_size) ids.resize(static_cast<size_t>(m.cfg.model.block_size));
  r.check_tokens = static_cast<int64_t>(ids.size());
  const auto idx = torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kInt64).unsqueeze(0);
  torch::Tensor logits;
  {
    torch::NoGradGuard no_grad;
    logits = m.model->forward(idx);
  }
  const auto ids_c = idx.contiguous();
  write("poslab_check.safetensors",
        safetensors_file({{"input_ids", "I64", ids_c.sizes().vec(),
                           std::string(static_cast<const char*>(ids_c.data_ptr()), ids.size() * sizeof(int64_t))},
                          f32("logits", logits)},
                         {{"text", kExportCheckText}, {"checkpoint", checkpoint}}));
  return r;
}

}  // namespace poslab
