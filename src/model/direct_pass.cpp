#include "model/direct_pass.h"

#include <ATen/record_function.h>

#include <algorithm>

#include "ops/attention.h"
#include "ops/gelu.h"
#include "ops/layer_norm.h"
#include "ops/residual.h"
#include "util/parallel.h"

namespace poslab {
namespace {

constexpr double kLayerNormEps = 1e-5;  // as LayerNormImpl

}  // namespace

DirectPass::DirectPass(GPT model) : model_(std::move(model)) {}

std::string DirectPass::unsupported(const GPT& model, bool bf16, const torch::Device& device,
                                    const std::string& bf16_products) {
  if (!device.is_cpu()) return "it runs on the CPU only";
  if (bf16 && bf16_products != "onednn") return "it runs bf16 with bf16_products=onednn only";
  if (model->is_training() && model->cfg.dropout > 0) return "it runs without dropout only";
  for (const auto& p : model->parameters())
    if (p.scalar_type() != torch::kFloat32 || !p.device().is_cpu()) return "it runs float32 CPU parameters only";
  return "";
}

void DirectPass::allocate(int64_t B, int64_t T, bool bf16) {
  if (B == B_ && T == T_ && bf16 == bf16_ && !blocks_.empty()) return;
  const ModelConfig& cfg = model_->cfg;
  const int64_t N = B * T, C = cfg.n_embd, nh = cfg.n_head;
  const auto act = torch::TensorOptions().dtype(bf16 ? torch::kBFloat16 : torch::kFloat32);
  auto rows = [N](int64_t cols) { return torch::empty({N, cols}); };  // float32
  auto act_rows = [N, act](int64_t cols) { return torch::empty({N, cols}, act); };
  blocks_.assign(cfg.n_layer, Block{});
  for (Block& b : blocks_) {
    b.x = rows(C);
    b.ln1 = act_rows(C);
    b.mean1 = torch::empty({N});
    b.rstd1 = torch::empty({N});
    b.qkv = act_rows(3 * C);
    b.att = act_rows(C);
    b.p = torch::empty({B * nh, T, T});
    b.mid = rows(C);
    b.ln2 = act_rows(C);
    b.mean2 = torch::empty({N});
    b.rstd2 = torch::empty({N});
    b.pre = act_rows(4 * C);
    b.act = act_rows(4 * C);
  }
  x_out_ = rows(C);
  lnf_ = act_rows(C);
  meanf_ = torch::empty({N});
  rstdf_ = torch::empty({N});
  dx_ = rows(C);
  dtmp_ = rows(C);
  dln_ = act_rows(C);
  datt_ = act_rows(C);
  dqkv_ = act_rows(3 * C);
  dact_ = act_rows(4 * C);
  dxb_ = bf16 ? act_rows(C) : torch::Tensor();
  proj_ = bf16 ? act_rows(C) : torch::Tensor();
  const int64_t chunks = layer_norm_grad_chunks(N);
  ln_dw_ = torch::empty({chunks, C});
  ln_db_ = torch::empty({chunks, C});
  gelu_db_ = bf16 ? torch::empty({bias_gelu_grad_chunks(N), 4 * C}) : torch::Tensor();
  col_sum_ = torch::empty({4 * C});
  col_sum_bf16_ = bf16 ? torch::empty({4 * C}, act) : torch::Tensor();
  dw_ = bf16 ? torch::empty({4 * C * C}, act) : torch::Tensor();
  B_ = B;
  T_ = T;
  bf16_ = bf16;
}

void DirectPass::cast_weights() {
  for (size_t l = 0; l < blocks_.size(); ++l) {
    const auto& m = *model_->h->ptr<BlockImpl>(l);
    for (const auto* layer : {&m.attn->c_attn, &m.attn->c_proj, &m.mlp->c_fc, &m.mlp->c_proj})
      for (const torch::Tensor& p : {(*layer)->weight, (*layer)->bias}) {
        if (!p.defined()) continue;
        torch::Tensor& c = casts_[p.unsafeGetTensorImpl()];
        if (!c.defined() || !c.sizes().equals(p.sizes()))
          c = torch::empty(p.sizes(), p.options().dtype(torch::kBFloat16));
        c.copy_(p);
      }
  }
}

const torch::Tensor& DirectPass::operand(const torch::Tensor& p) const {
  if (!bf16_) return p;
  const auto it = casts_.find(p.unsafeGetTensorImpl());
  TORCH_CHECK(it != casts_.end(), "DirectPass: no bf16 copy of a parameter of shape ", p.sizes());
  return it->second;
}

torch::Tensor* DirectPass::grad_of(const torch::Tensor& p, bool& fresh) {
  if (!p.defined() || !p.requires_grad()) return nullptr;
  torch::Tensor& g = p.mutable_grad();
  fresh = !g.defined();
  if (fresh) {
    torch::Tensor& buffer = grads_[p.unsafeGetTensorImpl()];
    if (!buffer.defined() || !buffer.sizes().equals(p.sizes())) buffer = torch::empty_like(p);
    g = buffer;
  }
  return &g;
}

void DirectPass::add_to_grad(const torch::Tensor& p, const torch::Tensor& d) {
  bool fresh = false;
  torch::Tensor* g = grad_of(p, fresh);
  if (g == nullptr) return;
  if (fresh)
    g->copy_(d);
  else
    g->add_(d);
}

void DirectPass::add_product(const torch::Tensor& p, const torch::Tensor& a, const torch::Tensor& b) {
  if (!p.requires_grad()) return;
  if (a.scalar_type() == torch::kBFloat16) {  // autocast's: the product in bf16, then added to the float32 grad
    torch::Tensor d = dw_.narrow(0, 0, p.numel()).view(p.sizes());
    return add_to_grad(p, at::mm_out(d, a, b));
  }
  bool fresh = false;
  torch::Tensor* g = grad_of(p, fresh);
  if (fresh)
    at::mm_out(*g, a, b);
  else
    g->addmm_(a, b);
}

void DirectPass::add_column_sum(const torch::Tensor& p, const torch::Tensor& d) {
  if (!p.defined() || !p.requires_grad()) return;
  const bool bf16 = d.scalar_type() == torch::kBFloat16;  // autocast's: the sum in bf16, then added
  torch::Tensor row = (bf16 ? col_sum_bf16_ : col_sum_).narrow(0, 0, d.size(1));
  bool fresh = false;
  torch::Tensor* g = bf16 ? nullptr : grad_of(p, fresh);
  if (fresh) {
    at::sum_out(*g, d, {0});
    return;
  }
  at::sum_out(row, d, {0});
  if (g != nullptr)
    g->add_(row);
  else
    add_to_grad(p, row);
}

void DirectPass::linear_out(torch::Tensor& out, const torch::Tensor& x, const torch::nn::Linear& layer, bool bias) {
  if (bias && layer->bias.defined())
    at::addmm_out(out, operand(layer->bias), x, operand(layer->weight).t());
  else
    at::mm_out(out, x, operand(layer->weight).t());
}

void DirectPass::residual_out(torch::Tensor& out, const torch::Tensor& res, const torch::Tensor& x,
                              const torch::nn::Linear& layer) {
  if (!bf16_) {
    linear_out(out, x, layer);
    out.add_(res);
    return;
  }
  linear_out(proj_, x, layer);
  residual_add_out(res, proj_, out);
}

void DirectPass::gelu_forward(Block& b, const torch::nn::Linear& c_fc) {
  if (!bf16_) {
    linear_out(b.pre, b.ln2, c_fc);
    at::gelu_out(b.act, b.pre);
  } else if (!c_fc->bias.defined()) {
    linear_out(b.pre, b.ln2, c_fc);
    gelu_bf16_out(b.pre, b.act);
  } else {  // as MLPImpl under autocast: the product without the bias, the float32 bias added inside the GELU
    linear_out(b.pre, b.ln2, c_fc, /*bias=*/false);
    bias_gelu_bf16_out(b.pre, c_fc->bias, b.act);
  }
}

void DirectPass::gelu_backward(const Block& b, const torch::nn::Linear& c_fc) {
  if (!bf16_) {
    at::gelu_backward_out(dact_, dact_, b.pre);
  } else if (!c_fc->bias.defined()) {
    gelu_backward_bf16_out(b.pre, dact_, dact_);
  } else {
    bias_gelu_backward_bf16_out(b.pre, c_fc->bias, dact_, dact_, gelu_db_);
    add_column_sum(c_fc->bias, gelu_db_);
  }
}

void DirectPass::linear_backward(const torch::nn::Linear& layer, const torch::Tensor& dy, const torch::Tensor& x,
                                 torch::Tensor& dx, bool bias) {
  add_product(layer->weight, dy.t(), x);
  if (bias) add_column_sum(layer->bias, dy);
  at::mm_out(dx, dy, operand(layer->weight));
}

const torch::Tensor& DirectPass::stream_grad() {
  if (!bf16_) return dx_;
  residual_branch_grad_out(dx_, dxb_);
  return dxb_;
}

void DirectPass::forward(const int64_t* idx, int64_t B, int64_t T) {
  const ModelConfig& cfg = model_->cfg;
  const int64_t N = B * T, C = cfg.n_embd, V = model_->vocab_size;
  // x[b, t] = wte[idx[b, t]] + wpe[t]
  {
    const float* wte = model_->wte->weight.data_ptr<float>();
    const float* wpe = model_->wpe ? model_->wpe->weight.data_ptr<float>() : nullptr;
    torch::Tensor& x0 = cfg.n_layer > 0 ? blocks_[0].x : x_out_;
    float* x = x0.data_ptr<float>();
    for (int64_t n = 0; n < N; ++n)
      TORCH_CHECK(idx[n] >= 0 && idx[n] < V, "token id ", idx[n], " at row ", n, " is outside the vocabulary [0, ", V,
                  ")");
    parallel_for(0, N, std::max<int64_t>(1, kElementwiseGrain / C), [&](int64_t lo, int64_t hi) {
      for (int64_t n = lo; n < hi; ++n) {
        const float* e = wte + idx[n] * C;
        float* out = x + n * C;
        if (wpe == nullptr) {
          std::copy(e, e + C, out);
          continue;
        }
        const float* pos = wpe + (n % T) * C;
        for (int64_t c = 0; c < C; ++c) out[c] = e[c] + pos[c];
      }
    });
  }
  for (size_t l = 0; l < blocks_.size(); ++l) {
    const auto& m = *model_->h->ptr<BlockImpl>(l);
    Block& b = blocks_[l];
    torch::Tensor& next = l + 1 < blocks_.size() ? blocks_[l + 1].x : x_out_;
    layer_norm_forward_out(b.x, m.ln_1->weight, m.ln_1->bias, kLayerNormEps, b.ln1, b.mean1, b.rstd1);
    linear_out(b.qkv, b.ln1, m.attn->c_attn);
    torch::Tensor att3 = b.att.view({B, T, C});
    causal_attention_forward_out(b.qkv.view({B, T, 3 * C}), cfg.n_head, att3, b.p);
    residual_out(b.mid, b.x, b.att, m.attn->c_proj);
    layer_norm_forward_out(b.mid, m.ln_2->weight, m.ln_2->bias, kLayerNormEps, b.ln2, b.mean2, b.rstd2);
    gelu_forward(b, m.mlp->c_fc);
    residual_out(next, b.mid, b.act, m.mlp->c_proj);
  }
  layer_norm_forward_out(x_out_, model_->ln_f->weight, model_->ln_f->bias, kLayerNormEps, lnf_, meanf_, rstdf_);
}

void DirectPass::backward(const int64_t* idx, int64_t B, int64_t T) {
  const int64_t C = model_->cfg.n_embd;
  // dln_ holds the gradient of ln_f's output (the head's dx); dx_ becomes the residual stream's.
  auto layer_norm_backward = [&](const LayerNorm& ln, const torch::Tensor& x, const torch::Tensor& mean,
                                 const torch::Tensor& rstd, const torch::Tensor& dy, torch::Tensor& dx) {
    float* db_parts = ln->bias.defined() ? ln_db_.data_ptr<float>() : nullptr;
    layer_norm_backward_out(x, ln->weight, mean, rstd, dy, dx, ln_dw_, db_parts);
    add_column_sum(ln->weight, ln_dw_);  // the chunks' partial sums, summed
    add_column_sum(ln->bias, ln_db_);
  };
  layer_norm_backward(model_->ln_f, x_out_, meanf_, rstdf_, dln_, dx_);
  for (size_t l = blocks_.size(); l-- > 0;) {
    const auto& m = *model_->h->ptr<BlockImpl>(l);
    Block& b = blocks_[l];
    // next = mid + c_proj(gelu(c_fc(ln_2(mid)))); dx_ is next's gradient
    linear_backward(m.mlp->c_proj, stream_grad(), b.act, dact_);
    gelu_backward(b, m.mlp->c_fc);
    linear_backward(m.mlp->c_fc, dact_, b.ln2, dln_, /*bias=*/!(bf16_ && m.mlp->c_fc->bias.defined()));
    layer_norm_backward(m.ln_2, b.mid, b.mean2, b.rstd2, dln_, dtmp_);
    dx_.add_(dtmp_);  // mid's gradient
    // mid = x + c_proj(attention(c_attn(ln_1(x))))
    linear_backward(m.attn->c_proj, stream_grad(), b.att, datt_);
    torch::Tensor dqkv3 = dqkv_.view({B, T, 3 * C});
    causal_attention_backward_out(b.qkv.view({B, T, 3 * C}), b.p, datt_.view({B, T, C}), model_->cfg.n_head, dqkv3);
    linear_backward(m.attn->c_attn, dqkv_, b.ln1, dln_);
    layer_norm_backward(m.ln_1, b.x, b.mean1, b.rstd1, dln_, dtmp_);
    dx_.add_(dtmp_);  // x's gradient
  }
  embedding_backward(idx, B, T);
}
void DirectPass::embedding_backward(const int64_t* idx, int64_t B, int64_t T) {
  const int64_t C = model_->cfg.n_embd;
  const float* dx = dx_.data_ptr<float>();
  bool fresh = false;
  if (model_->wpe) {
    if (torch::Tensor* g = grad_of(model_->wpe->weight, fresh)) {  // wpe[t] += the sum over the batch of dx[b, t]
      if (fresh) g->zero_();
      float* gp = g->data_ptr<float>();
      parallel_for(0, T, std::max<int64_t>(1, kElementwiseGrain / (B * C)), [&](int64_t lo, int64_t hi) {
        for (int64_t t = lo; t < hi; ++t)
          for (int64_t b = 0; b < B; ++b) {
            const float* d = dx + (b * T + t) * C;
            float* out = gp + t * C;
            for (int64_t c = 0; c < C; ++c) out[c] += d[c];
          }
      });
    }
  }
  // wte's gradient already holds the head's part (forward_backward): the rows of the tokens read add to it, in
  // row order.
  if (model_->wte->weight.requires_grad()) {
    float* gp = model_->wte->weight.mutable_grad().data_ptr<float>();
    for (int64_t n = 0; n < B * T; ++n) {
      const float* d = dx + n * C;
      float* out = gp + idx[n] * C;
      for (int64_t c = 0; c < C; ++c) out[c] += d[c];
    }
  }
}

torch::Tensor DirectPass::prepare(const torch::Tensor& idx, const torch::Tensor& targets, bool bf16) {
  TORCH_CHECK(idx.dim() == 2 && targets.sizes() == idx.sizes(), "DirectPass: expected (B, T) ids and targets, got ",
              idx.sizes(), " and ", targets.sizes());
  TORCH_CHECK(idx.size(1) <= model_->cfg.block_size, "sequence of length ", idx.size(1), " runs past block_size ",
              model_->cfg.block_size);
  allocate(idx.size(0), idx.size(1), bf16);
  if (bf16) cast_weights();
  return idx.to(torch::kLong).contiguous();
}

torch::Tensor DirectPass::loss(const torch::Tensor& idx, const torch::Tensor& targets, double weight, bool bf16) {
  RECORD_FUNCTION("poslab::direct_forward", std::vector<c10::IValue>());
  torch::NoGradGuard no_grad;
  const torch::Tensor ids = prepare(idx, targets, bf16);
  forward(ids.data_ptr<int64_t>(), idx.size(0), idx.size(1));
  return head_cross_entropy(lnf_, model_->wte->weight, targets.reshape(-1), weight);
}

torch::Tensor DirectPass::forward_backward(const torch::Tensor& idx, const torch::Tensor& targets, double weight,
                                           bool bf16) {
  RECORD_FUNCTION("poslab::direct_pass", std::vector<c10::IValue>());
  torch::NoGradGuard no_grad;
  const torch::Tensor ids = prepare(idx, targets, bf16);
  const int64_t B = idx.size(0), T = idx.size(1);
  const int64_t* ip = ids.data_ptr<int64_t>();
  forward(ip, B, T);
  // The head, tied to wte: its gradient first (written into wte's grad when fresh, else added to it).
  const torch::Tensor& wte = model_->wte->weight;
  bool fresh = false;
  torch::Tensor* g = grad_of(wte, fresh);
  torch::Tensor* dw = nullptr;
  if (g != nullptr && fresh) {
    dw = g;
  } else if (g != nullptr) {
    if (!dwte_.defined() || !dwte_.sizes().equals(wte.sizes())) dwte_ = torch::empty_like(wte);
    dw = &dwte_;
  }
  torch::Tensor loss = head_cross_entropy_out(lnf_, wte, targets.reshape(-1), weight, dln_, dw, head_);
  if (g != nullptr && !fresh) g->add_(dwte_);
  backward(ip, B, T);
  return loss;
}

}  // namespace poslab
