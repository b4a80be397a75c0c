#include "model/gpt.h"

#include <cmath>

#include "ops/attention.h"
#include "ops/autocast.h"
#include "ops/bf16_products.h"
#include "ops/causal_softmax.h"
#include "ops/cross_entropy.h"
#include "ops/gelu.h"
#include "ops/head_loss.h"
#include "ops/layer_norm.h"
#include "ops/residual.h"
#include "util/kernel_paths.h"
#include "util/positions.h"

namespace poslab {
namespace F = torch::nn::functional;
namespace {

constexpr double kInitStd = 0.02;  // nanoGPT's N(0, 0.02²) for the weights and the token table

// poslab's own pointwise kernels (LayerNorm, GELU, residual add, head + cross-entropy) rather than LibTorch's ops:
// on the CPU, unless the kernel paths say libtorch (util/kernel_paths.h).
bool fused_pointwise(const torch::Tensor& x) { return x.device().is_cpu() && kernel_paths().pointwise == "fused"; }

// A linear layer on (..., C_in) as one addmm on the 2-D view. LibTorch 1.13's linear() runs a 3-D input as a
// matmul followed by a separate, slow bias add_ (and, in backward, a sum): one fused op instead. Under bf16
// autocast with bf16_products=float, the product runs in float (bf16_products.h).
torch::Tensor linear(torch::nn::Linear& layer, const torch::Tensor& x) {
  auto sizes = x.sizes().vec();
  const torch::Tensor x2 = x.reshape({-1, sizes.back()});
  const torch::Tensor y = widen_bf16_products(x) ? widened_linear(x2, layer->weight, layer->bias) : layer->forward(x2);
  sizes.back() = y.size(1);
  return y.view(sizes);
}

}  // namespace

LayerNormImpl::LayerNormImpl(int64_t n_embd, bool use_bias) {
  weight = register_parameter("weight", torch::ones({n_embd}));
  if (use_bias) bias = register_parameter("bias", torch::zeros({n_embd}));
}

torch::Tensor LayerNormImpl::forward(const torch::Tensor& x) {
  // On CPU, one fused op; under bf16 autocast it emits bf16 itself (what the next matrix product would cast to).
  if (fused_pointwise(x) && x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32)
    return fused_layer_norm(x, weight, bias, 1e-5, cpu_autocast_bf16());
  return torch::layer_norm(x, {weight.size(0)}, weight, bias, 1e-5);
}

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const ModelConfig& cfg) : n_head(cfg.n_head), dropout(cfg.dropout) {
  c_attn =
      register_module("c_attn", torch::nn::Linear(torch::nn::LinearOptions(cfg.n_embd, 3 * cfg.n_embd).bias(cfg.bias)));
  c_proj =
      register_module("c_proj", torch::nn::Linear(torch::nn::LinearOptions(cfg.n_embd, cfg.n_embd).bias(cfg.bias)));
  attn_dropout = register_module("attn_dropout", torch::nn::Dropout(cfg.dropout));
  resid_dropout = register_module("resid_dropout", torch::nn::Dropout(cfg.dropout));
  causal_bias = torch::full({cfg.block_size, cfg.block_size}, -std::numeric_limits<float>::infinity()).triu(1);
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  const torch::Tensor qkv = linear(c_attn, x);  // (B, T, 3C)
  torch::Tensor y;                              // (B, T, C)
  if (x.device().is_cpu() && !(is_training() && dropout > 0.0) && kernel_paths().attention == "fused")
    y = fused_attention(qkv);
  else if (TORCH_VERSION_MAJOR >= 2)
    y = sdpa_attention(qkv);
  else
    y = bmm_attention(qkv);
  return resid_dropout(linear(c_proj, y));
}

torch::Tensor CausalSelfAttentionImpl::fused_attention(const torch::Tensor& qkv) {
  // Every head's scores, mask, softmax and weighted sum in one op that reads q, k, v in place.
  return causal_attention(qkv, n_head);
}

torch::Tensor CausalSelfAttentionImpl::sdpa_attention(const torch::Tensor& qkv) {
#if TORCH_VERSION_MAJOR >= 2
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, hs = C / n_head;
  auto qkv3 = qkv.split(C, /*dim=*/2);                        // 3 x (B, T, C)
  auto q = qkv3[0].view({B, T, n_head, hs}).transpose(1, 2);  // (B, nh, T, hs)
  auto k = qkv3[1].view({B, T, n_head, hs}).transpose(1, 2);  // (B, nh, T, hs)
  auto v = qkv3[2].view({B, T, n_head, hs}).transpose(1, 2);  // (B, nh, T, hs)
  auto y = at::scaled_dot_product_attention(q, k, v, {}, is_training() ? dropout : 0.0, /*is_causal=*/true);
  return y.transpose(1, 2).contiguous().view({B, T, C});  // (B, T, C)
#else
  TORCH_CHECK(false, "scaled_dot_product_attention needs LibTorch 2.x");
#endif
}

torch::Tensor CausalSelfAttentionImpl::bmm_attention(const torch::Tensor& qkv) {
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, hs = C / n_head;
  auto qkv3 = qkv.split(C, /*dim=*/2);        // 3 x (B, T, C)
  auto heads = [&](const torch::Tensor& t) {  // (B*nh, T, hs)
    return t.view({B, T, n_head, hs}).transpose(1, 2).reshape({B * n_head, T, hs});
  };
  const auto q3 = heads(qkv3[0]), k3 = heads(qkv3[1]), v3 = heads(qkv3[2]);
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  torch::Tensor att;  // (B*nh, T, T)
  if (qkv.device().is_cpu() && kernel_paths().attention == "fused") {
    // Scale, mask and softmax as one op that skips the keys after each query (forward and backward).
    att = causal_softmax(torch::bmm(q3, k3.transpose(1, 2)), scale);
  } else {
    // One GEMM for scores, scale and mask: scale * q k^T + bias, the bias 0 on and below the diagonal, -inf above.
    if (causal_bias.device() != qkv.device()) causal_bias = causal_bias.to(qkv.device());
    att = torch::softmax(torch::baddbmm(causal_bias.slice(0, 0, T).slice(1, 0, T), q3, k3.transpose(1, 2), 1.0, scale),
                         -1);
  }
  att = attn_dropout(att);
  auto y = torch::bmm(att, v3).view({B, n_head, T, hs});  // (B, nh, T, hs)
  return y.transpose(1, 2).contiguous().view({B, T, C});  // (B, T, C)
}

MLPImpl::MLPImpl(const ModelConfig& cfg) {
  c_fc =
      register_module("c_fc", torch::nn::Linear(torch::nn::LinearOptions(cfg.n_embd, 4 * cfg.n_embd).bias(cfg.bias)));
  c_proj =
      register_module("c_proj", torch::nn::Linear(torch::nn::LinearOptions(4 * cfg.n_embd, cfg.n_embd).bias(cfg.bias)));
  dropout = register_module("dropout", torch::nn::Dropout(cfg.dropout));
}

torch::Tensor MLPImpl::forward(const torch::Tensor& x) {
  torch::Tensor h;  // (B, T, 4C)
  if (fused_pointwise(x) && cpu_autocast_bf16() && c_fc->bias.defined()) {
    // bf16: the bias added inside the GELU, in float (addmm would first copy it into every row of the output).
    const torch::Tensor x2 = x.reshape({-1, x.size(-1)});
    const torch::Tensor pre =
        widen_bf16_products(x) ? widened_linear(x2, c_fc->weight, torch::Tensor()) : torch::mm(x2, c_fc->weight.t());
    h = bias_gelu(pre, c_fc->bias).view({x.size(0), x.size(1), -1});
  } else if (fused_pointwise(x)) {
    h = poslab::gelu(linear(c_fc, x));
  } else {
    h = torch::gelu(linear(c_fc, x));
  }
  return dropout(linear(c_proj, h));  // (B, T, C)
}

BlockImpl::BlockImpl(const ModelConfig& cfg) {
  ln_1 = register_module("ln_1", LayerNorm(cfg.n_embd, cfg.bias));
  attn = register_module("attn", CausalSelfAttention(cfg));
  ln_2 = register_module("ln_2", LayerNorm(cfg.n_embd, cfg.bias));
  mlp = register_module("mlp", MLP(cfg));
}

torch::Tensor BlockImpl::forward(torch::Tensor x) {
  if (!fused_pointwise(x)) {
    x = x + attn(ln_1(x));
    return x + mlp(ln_2(x));
  }
  x = residual_add(x, attn(ln_1(x)));
  return residual_add(x, mlp(ln_2(x)));
}

GPTImpl::GPTImpl(const ModelConfig& c, int64_t vocab) : cfg(c), vocab_size(vocab) {
  wte = register_module("wte", torch::nn::Embedding(vocab_size, cfg.n_embd));
  if (cfg.position != "none") wpe = register_module("wpe", torch::nn::Embedding(cfg.block_size, cfg.n_embd));
  drop = register_module("drop", torch::nn::Dropout(cfg.dropout));
  h = register_module("h", torch::nn::ModuleList());
  for (int i = 0; i < cfg.n_layer; ++i) h->push_back(Block(cfg));
  ln_f = register_module("ln_f", LayerNorm(cfg.n_embd, cfg.bias));

  // nanoGPT init: N(0, 0.02) for weights, zero biases, residual projections scaled by 1/sqrt(2 n_layer).
  torch::NoGradGuard no_grad;
  const double proj_std = kInitStd / std::sqrt(2.0 * cfg.n_layer);
  for (auto& p : named_parameters()) {
    const std::string& name = p.key();
    auto& t = p.value();
    if (name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0) {
      t.zero_();
    } else if (name.find("ln_") != std::string::npos) {
      t.fill_(1.0);
    } else if (name.find("c_proj.weight") != std::string::npos) {
      t.normal_(0.0, proj_std);
    } else {
      t.normal_(0.0, kInitStd);
    }
  }
  if (cfg.position == "learned") {
    wpe->weight.normal_(0.0, cfg.wpe_init_std);
  } else if (cfg.position == "sinusoidal") {
    // "match": rows of the token rows' expected norm at initialisation (N(0, 0.02²) entries: 0.02·√C), so that the
    // fixed control neither drowns the tokens nor vanishes under them; each row of the formula has norm √(C/2).
    const double scale = cfg.sinusoidal_scale == "match" ? kInitStd * std::sqrt(2.0) : 1.0;
    wpe->weight.copy_(sinusoidal_table(cfg.block_size, cfg.n_embd) * scale);
    wpe->weight.requires_grad_(false);  // a fixed control, never trained
  }
}

torch::Tensor GPTImpl::hidden(const torch::Tensor& idx, int64_t position_offset) {
  const int64_t T = idx.size(1);
  TORCH_CHECK(position_offset >= 0 && position_offset + T <= cfg.block_size, "sequence of length ", T, " at position ",
              position_offset, " runs past block_size ", cfg.block_size);
  auto x = wte(idx);                                                            // (B, T, C)
  if (wpe) x = x + wpe->weight.slice(0, position_offset, position_offset + T);  // + (T, C)
  x = drop(x);
  for (const auto& block : *h) x = block->as<Block>()->forward(x);
  return ln_f(x);
}

torch::Tensor GPTImpl::forward(const torch::Tensor& idx, int64_t position_offset) {
  const torch::Tensor x = hidden(idx, position_offset);  // (B, T, C)
  return F::linear(x.reshape({-1, cfg.n_embd}), wte->weight)
      .view({x.size(0), x.size(1), -1});  // (B, T, V), head tied to wte
}

torch::Tensor GPTImpl::forward_loss(const torch::Tensor& idx, const torch::Tensor& targets, double weight) {
  const torch::Tensor x = hidden(idx);  // (B, T, C)
  if (fused_pointwise(x))
    return head_cross_entropy(x.reshape({-1, cfg.n_embd}), wte->weight, targets.reshape(-1), weight);
  return loss(F::linear(x, wte->weight), targets, weight);
}

torch::Tensor GPTImpl::loss(const torch::Tensor& logits, const torch::Tensor& targets, double weight) {
  const torch::Tensor flat = logits.reshape({-1, logits.size(-1)});
  if (fused_pointwise(flat)) return fused_cross_entropy(flat, targets.reshape(-1), weight);  // one pass, no float copy
  auto loss = F::cross_entropy(flat.to(torch::kFloat32), targets.reshape(-1));
  return weight == 1.0 ? loss : loss * weight;
}

torch::Tensor GPTImpl::position_table() const { return wpe ? wpe->weight : torch::Tensor(); }

int64_t GPTImpl::num_params(bool include_position_table) const {
  int64_t n = 0;
  for (const auto& p : named_parameters()) {
    if (!include_position_table && p.key() == "wpe.weight") continue;
    n += p.value().numel();
  }
  return n;
}

}  // namespace poslab
