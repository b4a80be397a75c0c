#include "train/snapshot.h"

#include <spdlog/fmt/fmt.h>

#include <cmath>
#include <limits>

#include "analysis/position_token.h"
#include "analysis/snapshot_hook.h"
#include "data/batches.h"
#include "formats/npy.h"
#include "run/run_files.h"
#include "util/fs.h"
#include "util/json_text.h"

namespace poslab {

AttentionWeights layer0_attention_weights(const GPT& model) {
  const BlockImpl* block = model->h->ptr(0)->as<BlockImpl>();
  AttentionWeights w;
  w.table = model->position_table();
  w.mean_token = model->wte->weight.mean(0);
  w.ln_weight = block->ln_1->weight;
  w.ln_bias = block->ln_1->bias;
  w.c_attn_weight = block->attn->c_attn->weight;
  if (block->attn->c_attn->options.bias()) w.c_attn_bias = block->attn->c_attn->bias;
  w.n_head = block->attn->n_head;
  return w;
}

AttentionKernels data_attention(GPT& model, const std::vector<int32_t>& tokens, int batches, int batch_size,
                                uint64_t seed) {
  const bool was_training = model->is_training();
  model->eval();
  torch::NoGradGuard no_grad;
  const int64_t T = model->cfg.block_size, C = model->cfg.n_embd;
  auto* block = model->h->ptr(0)->as<BlockImpl>();
  const int64_t nh = block->attn->n_head, hs = C / nh;
  const auto future = torch::ones({T, T}, torch::kBool).triu(1);
  BatchSampler sampler(tokens, batch_size, static_cast<int>(T), seed);
  auto sum = torch::zeros({nh, T, T}, torch::kFloat64);
  for (int b = 0; b < batches; ++b) {
    const torch::Tensor idx = sampler.next().first;            // (B, T)
    auto x = model->wte(idx.to(model->wte->weight.device()));  // (B, T, C)
    if (model->wpe) x = x + model->wpe->weight.slice(0, 0, T);
    const auto qkv = block->attn->c_attn(block->ln_1(x)).to(torch::kCPU, torch::kFloat64);  // (B, T, 3C)
    const auto q = qkv.slice(2, 0, C).view({-1, T, nh, hs}).transpose(1, 2);                // (B, nh, T, hs)
    const auto k = qkv.slice(2, C, 2 * C).view({-1, T, nh, hs}).transpose(1, 2);            // (B, nh, T, hs)
    auto s = q.matmul(k.transpose(2, 3)) / std::sqrt(static_cast<double>(hs));
    s = s.masked_fill(future, -std::numeric_limits<double>::infinity());
    sum += torch::softmax(s, -1).sum(0);
  }
  model->train(was_training);
  AttentionKernels out;
  out.positions = T;
  out.n_head = nh;
  out.mean_token_added = false;
  out.kernels = sum / static_cast<double>(static_cast<int64_t>(batches) * batch_size);
  for (int64_t h = 0; h < nh; ++h) out.heads.push_back(summarise_kernel(out.kernels[h], static_cast<int>(h)));
  return out;
}

nlohmann::json model_usage_json(const GPT& model, int64_t step, AttentionKernels* kernels) {
  torch::NoGradGuard no_grad;
  AttentionKernels k = attention_kernels(layer0_attention_weights(model));
  nlohmann::json j = {
      {"step", step},
      {"attention_kernels", to_json(k)},
      {"position_token", to_json(position_token_geometry(model->wte->weight, model->position_table()))}};
  if (kernels) *kernels = std::move(k);
  return j;
}

std::string write_snapshot(const std::string& run_dir, int64_t step, GPT& model, double train_loss, double val_loss,
                           const UsageWindows* windows, std::optional<Analysis>* analysis) {
  const RunFolder run(run_dir);
  make_dirs(run.snapshots());
  auto w = model->position_table().detach().to(torch::kCPU, torch::kFloat32).contiguous();  // (block_size, n_embd)
  SnapshotRecord record{step, snapshot_file_name(step), run.snapshot(step), train_loss, val_loss};
  write_file_atomic(record.path, npy_bytes(w.data_ptr<float>(), w.size(0), w.size(1)));
  append_snapshot_record(run, record);
  std::string summary = analyze_snapshot(w, SnapshotInfo{step, record.path}, analysis);
  if (model->h->size() == 0) return summary;
  // Layer 0's kernels, computed in full before their files are written: a failure of its own is said in the line
  AttentionKernels k;
  nlohmann::json usage;
  try {
    usage = model_usage_json(model, step, &k);
    if (windows && windows->tokens && windows->tokens->size() > static_cast<size_t>(model->cfg.block_size)) {
      const AttentionKernels seen =
          data_attention(model, *windows->tokens, windows->batches, windows->batch_size, windows->seed);
      usage["data_attention"] = to_json(seen);
      usage["data_attention"]["windows"] = windows->batches * windows->batch_size;
    }
  } catch (const std::exception& e) {
    return summary + " | layer-0 heads: not measured: " + e.what();
  }
  const auto flat = k.kernels.to(torch::kFloat32).reshape({-1, k.positions}).contiguous();  // (n_head·P, P)
  write_file_atomic(run.snapshot_kernels(step), npy_bytes(flat.data_ptr<float>(), flat.size(0), flat.size(1)));
  write_file_atomic(run.snapshot_usage(step), json_text(usage) + "\n");
  return summary + " | layer-0 heads: " + head_kinds_words(usage);
}

}  // namespace poslab
