#include "load/model_tables.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>

#include "util/error.h"
#include "util/near_words.h"
#include "util/plural.h"

namespace poslab {

std::map<std::string, std::vector<int64_t>> tensor_shapes(const ModelFolder& m) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& [name, w] : m.tensors) out[name] = w.entry.shape;
  return out;
}

torch::Tensor read_model_tensor(const ModelFolder& m, const std::string& name) {
  const auto it = m.tensors.find(name);
  if (it == m.tensors.end()) {
    std::vector<std::string> names;
    for (const auto& [n, w] : m.tensors) names.push_back(n);
    std::string all;
    for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
    spdlog::debug("{}: its tensors: {}", m.path, all);
    const MissedName missed =
        missed_name(name, names,
                    "pass one of its names with --tensor" +
                        (names.size() > 8 ? " (SPDLOG_LEVEL=debug lists all " + std::to_string(names.size()) + ")"
                                          : std::string()));
    throw Error(m.path + ": no tensor named '" + name + "'; it holds " + missed.names, missed.hint);
  }
  const SafetensorsEntry& e = it->second.entry;
  const auto type = e.dtype == "F32"    ? torch::kFloat32
                    : e.dtype == "F16"  ? torch::kFloat16
                    : e.dtype == "BF16" ? torch::kBFloat16
                    : e.dtype == "I64"  ? torch::kInt64
                                        : torch::kFloat64;
  auto t = torch::empty(e.shape, type);
  std::ifstream in(it->second.file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(e.offset));
  in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(e.bytes));
  if (!in || static_cast<size_t>(in.gcount()) != e.bytes)
    throw Error(it->second.file + ": cannot read tensor '" + name + "' (truncated?)", "download the file again");
  return t.to(torch::kFloat64);
}

ModelTable load_model_table(const ModelFolder& m, const PositionTableSpec& s) {
  torch::Tensor w = read_model_tensor(m, s.tensor).reshape({s.rows, s.dims});
  ModelTable mt{s, m.path + ":" + s.tensor, w.slice(0, s.first_row(), s.rows).contiguous()};
  if (s.first_row() > 0) mt.source += " rows " + std::to_string(s.first_row()) + ":" + std::to_string(s.rows);
  return mt;
}

std::vector<ModelTable> load_model_tables(const ModelFolder& m, const ModelTables& t, bool with_frozen) {
  std::vector<ModelTable> out;
  for (const PositionTableSpec& s : t.tables)
    if (!s.frozen || with_frozen) out.push_back(load_model_table(m, s));
  return out;
}

namespace {

// Layer 0's head count from the config (its first key of `keys` that holds an integer): one that does not divide
// the attention's width is the config's fault, said before the weights are read as heads.
int64_t config_heads(const nlohmann::json& c, std::initializer_list<const char*> keys, const std::string& path,
                     int64_t width) {
  for (const char* k : keys)
    if (c.contains(k) && c[k].is_number_integer()) {
      const int64_t n = c[k].get<int64_t>();
      if (n < 1 || width % n != 0)
        throw Error(fmt::format("{}: {} {} {}", path, k, n,
                                n < 1 ? "is no number of attention heads (1 or more)"
                                      : fmt::format("does not divide the width of layer 0's attention, {}", width)),
                    fmt::format("is this config.json the model's own? {} is its number of attention heads, a divisor "
                                "of {}",
                                k, width));
      return n;
    }
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw Error(path + " is missing: layer 0's heads (" + *keys.begin() + ") are read from it",
                "put the model's config.json beside its weights (transformers' save_pretrained writes it)");
  throw Error(path + " has no " + *keys.begin(), "layer 0's heads need the model's config.json beside its weights");
}

double config_double(const nlohmann::json& c, const char* key, double fallback) {
  return c.contains(key) && c[key].is_number() ? c[key].get<double>() : fallback;
}

// A weight the table is read beside (the token embedding, layer 0's LayerNorm and attention): one NaN or Inf in it
// would come out as NaN figures, or LibTorch's error from deep inside an eigendecomposition.
torch::Tensor read_model_weight(const ModelFolder& m, const std::string& name) {
  torch::Tensor w = read_model_tensor(m, name);
  if (const int64_t bad = (~torch::isfinite(w)).sum().item<int64_t>(); bad > 0) {
    const auto it = m.tensors.find(name);
    throw Error((it == m.tensors.end() ? m.path : it->second.file) + ": tensor '" + name + "' holds " +
                    counted(bad, "NaN or Inf value"),
                "the file is damaged, or the model diverged: download it again, or read another model");
  }
  return w;
}

}  // namespace

torch::Tensor token_embedding(const ModelFolder& m, const ModelTables& t) {
  if (t.layout == "gpt2") return read_model_weight(m, t.prefix + "wte.weight");
  if (t.layout == "bert") return read_model_weight(m, t.prefix + "embeddings.word_embeddings.weight");
  return {};
}

AttentionWeights layer0_weights(const ModelFolder& m, const ModelTables& t, const ModelTable& table) {
  AttentionWeights w;
  w.table = table.rows;
  const std::string& p = t.prefix;
  const std::string config = m.config_path.empty() ? m.path + "/config.json" : m.config_path;
  if (t.layout == "gpt2") {
    w.mean_token = read_model_weight(m, p + "wte.weight").mean(0);
    w.ln_weight = read_model_weight(m, p + "h.0.ln_1.weight");
    w.ln_bias = read_model_weight(m, p + "h.0.ln_1.bias");
    w.ln_eps = config_double(m.config, "layer_norm_epsilon", 1e-5);
    w.c_attn_weight = read_model_weight(m, p + "h.0.attn.c_attn.weight").t().contiguous();  // Conv1D: (in, out)
    w.c_attn_bias = read_model_weight(m, p + "h.0.attn.c_attn.bias");
    w.n_head = config_heads(m.config, {"n_head", "num_attention_heads"}, config, w.c_attn_weight.size(1));
    return w;
  }
  if (t.layout == "bert") {
    const std::string e = p + "embeddings.", a = p + "encoder.layer.0.attention.self.";
    w.mean_token = read_model_weight(m, e + "word_embeddings.weight").mean(0);
    if (m.tensors.count(e + "token_type_embeddings.weight"))
      w.mean_token = w.mean_token + read_model_weight(m, e + "token_type_embeddings.weight")[0];
    w.ln_weight = read_model_weight(m, e + "LayerNorm.weight");
    w.ln_bias = read_model_weight(m, e + "LayerNorm.bias");
    w.ln_eps = config_double(m.config, "layer_norm_eps", 1e-12);
    w.c_attn_weight = torch::cat({read_model_weight(m, a + "query.weight"), read_model_weight(m, a + "key.weight"),
                                  read_model_weight(m, a + "value.weight")});  // nn.Linear: (out, in)
    w.c_attn_bias = torch::cat({read_model_weight(m, a + "query.bias"), read_model_weight(m, a + "key.bias"),
                                read_model_weight(m, a + "value.bias")});
    w.n_head = config_heads(m.config, {"num_attention_heads", "n_head"}, config, w.c_attn_weight.size(1));
    w.causal = false;
    return w;
  }
  throw Error(m.path + ": layer 0 of a " + (t.family.empty() ? "model" : t.family) + " folder is not read",
              "layer 0's kernels are read for GPT-2- and BERT-layout folders (docs/models.md)");
}

}  // namespace poslab
