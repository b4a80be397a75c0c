#include "train/optim.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "train/adamw_kernel.h"
#include "util/error.h"
#include "util/parallel.h"

namespace poslab {

void set_trainable(GPT& model, const std::string& trainable) {
  if (trainable == "all") return;
  TORCH_CHECK(trainable == "wpe", "set_trainable: unknown train.trainable ", trainable);
  for (auto& p : model->named_parameters()) p.value().requires_grad_(p.key() == "wpe.weight");
}

ParamGroups split_param_groups(const GPT& model, bool decay_position_table, bool own_position_group) {
  ParamGroups g;
  for (const auto& p : model->named_parameters()) {
    if (!p.value().requires_grad()) continue;
    const bool is_wpe = p.key() == "wpe.weight";
    if (is_wpe && own_position_group) {
      g.position_names.push_back(p.key());
      g.position.push_back(p.value());
      continue;
    }
    const bool decay = is_wpe ? decay_position_table : p.value().dim() >= 2;
    (decay ? g.decay_names : g.no_decay_names).push_back(p.key());
    (decay ? g.decay : g.no_decay).push_back(p.value());
  }
  return g;
}

bool position_has_own_group(const TrainConfig& t) { return t.position_lr_scale != 1.0; }

std::unique_ptr<DeviceAdamW> make_optimizer(const GPT& model, const TrainConfig& t) {
  const ParamGroups g = split_param_groups(model, t.decay_position_table, position_has_own_group(t));
  auto options = [&](double lr, double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(lr).betas({t.beta1, t.beta2}).eps(1e-8).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(g.decay, options(t.lr, t.weight_decay));
  groups.emplace_back(g.no_decay, options(t.lr, 0.0));
  if (position_has_own_group(t))
    groups.emplace_back(g.position, options(t.lr * t.position_lr_scale, t.decay_position_table ? t.weight_decay : 0.0));
  auto optimizer = std::make_unique<DeviceAdamW>(groups, torch::optim::AdamWOptions(t.lr));
  if (position_has_own_group(t)) optimizer->set_lr_scales({1.0, 1.0, t.position_lr_scale});
  return optimizer;
}

bool adamw_on_device(const TrainConfig& t, const torch::Device& device) {
  if (t.adamw == "poslab") return false;
  const std::string why = DeviceAdamW::unsupported(device);
  if (t.adamw == "fused" && !why.empty())
    throw Error("train.adamw = fused: " + why,
                "set train.adamw: auto (or poslab), or build against PyTorch's LibTorch "
                "2.x: bash scripts/build.sh --libtorch pip");
  return t.adamw == "fused" || (device.is_cuda() && why.empty());
}

torch::Tensor grad_norm_on_device(const torch::optim::AdamW& opt) {
  std::vector<torch::Tensor> grads;
  for (const auto& group : opt.param_groups())
    for (const auto& p : group.params())
      if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return {};
  return torch::stack(torch::_foreach_norm(grads)).norm();  // the norm of the parameters' norms
}

namespace {

template <typename Key>  // a template, so that only the branch of this LibTorch's key type is compiled
Key state_key(const torch::Tensor& param) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream key;  // as LibTorch 1.x's c10::guts::to_string(param.unsafeGetTensorImpl())
    key << param.unsafeGetTensorImpl();
    return key.str();
  } else {
    return static_cast<Key>(param.unsafeGetTensorImpl());
  }
}

}  // namespace

OptimizerStateKey optimizer_state_key(const torch::Tensor& param) { return state_key<OptimizerStateKey>(param); }

torch::optim::AdamWParamState& adamw_state(torch::optim::AdamW& opt, const torch::Tensor& param) {
  const OptimizerStateKey key = optimizer_state_key(param);
  auto& states = opt.state();
  if (states.find(key) == states.end()) {  // as AdamW::step does on a parameter's first step
    auto st = std::make_unique<torch::optim::AdamWParamState>();
    st->step(0);
    st->exp_avg(torch::zeros_like(param, torch::MemoryFormat::Preserve));
    st->exp_avg_sq(torch::zeros_like(param, torch::MemoryFormat::Preserve));
    states[key] = std::move(st);
  }
  return static_cast<torch::optim::AdamWParamState&>(*states[key]);
}

void set_optimizer_hparams(torch::optim::AdamW& opt, double lr, const TrainConfig& t) {
  auto& groups = opt.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    auto& o = static_cast<torch::optim::AdamWOptions&>(groups[i].options());
    const bool position = i == 2;  // wpe's own group (make_optimizer)
    o.lr(position ? lr * t.position_lr_scale : lr);
    o.weight_decay(i == 0 || (position && t.decay_position_table) ? t.weight_decay : 0.0);
    o.betas({t.beta1, t.beta2});
  }
}

namespace {

bool fusable(const torch::Tensor& p) {
  return p.device().is_cpu() && p.scalar_type() == torch::kFloat32 && p.is_contiguous() &&
         p.grad().scalar_type() == torch::kFloat32 && p.grad().is_contiguous();
}

}  // namespace

double grad_norm(const torch::optim::AdamW& opt) { return grad_norm_and(opt, torch::Tensor()).first; }

std::pair<double, double> grad_norm_and(const torch::optim::AdamW& opt, const torch::Tensor& scalar) {
  double squares = 0;
  std::vector<torch::Tensor> on_device;  // GPU gradients' sums of squares, added there: one copy to the host
  for (const auto& group : opt.param_groups())
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (!p.grad().device().is_cpu()) {
        on_device.push_back(p.grad().to(torch::kFloat64).pow(2).sum());
        continue;
      }
      const torch::Tensor g = p.grad().to(torch::kFloat32).contiguous();
      squares += sum_of_squares(g.data_ptr<float>(), g.numel());
    }
  if (on_device.empty()) return {std::sqrt(squares), scalar.defined() ? scalar.item<double>() : NAN};
  torch::Tensor sums = torch::stack(on_device).sum();
  if (scalar.defined()) sums = torch::stack({sums, scalar.to(sums.device(), torch::kFloat64).reshape({})});
  const torch::Tensor host = sums.to(torch::kCPU).reshape(-1);  // the one copy (and synchronisation)
  squares += host[0].item<double>();
  return {std::sqrt(squares), scalar.defined() ? host[1].item<double>() : NAN};
}

void fused_adamw_step(torch::optim::AdamW& opt, double grad_scale, const PartRunner& run) {
  RECORD_FUNCTION("poslab::fused_adamw_step", std::vector<c10::IValue>());
  bool all = true;
  for (const auto& group : opt.param_groups())
    for (const auto& p : group.params()) all = all && (!p.grad().defined() || fusable(p));
  if (!all) {  // not float32 CPU: LibTorch's own step, with the gradients scaled first
    torch::NoGradGuard no_grad;
    if (grad_scale != 1.0)
      for (auto& group : opt.param_groups())
        for (auto& p : group.params())
          if (p.grad().defined()) p.mutable_grad().mul_(grad_scale);
    opt.step();
    return;
  }
  struct Item {
    float *p, *m, *v;
    const float* g;
    int64_t n;
    AdamWScalars s;
  };
  std::vector<Item> items;
  for (auto& group : opt.param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    TORCH_CHECK(!o.amsgrad(), "fused_adamw_step: amsgrad is not supported");
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& st = adamw_state(opt, p);
      if (!st.exp_avg().is_contiguous()) st.exp_avg(st.exp_avg().contiguous());
      if (!st.exp_avg_sq().is_contiguous()) st.exp_avg_sq(st.exp_avg_sq().contiguous());
      st.step(st.step() + 1);
      const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
      const double bc1 = 1 - std::pow(beta1, st.step()), bc2 = 1 - std::pow(beta2, st.step());
      const AdamWScalars s{static_cast<float>(grad_scale),   static_cast<float>(1 - o.lr() * o.weight_decay()),
                           static_cast<float>(beta1),        static_cast<float>(beta2),
                           static_cast<float>(o.lr() / bc1), static_cast<float>(std::sqrt(bc2)),
                           static_cast<float>(o.eps())};
      items.push_back({p.data_ptr<float>(), st.exp_avg().data_ptr<float>(), st.exp_avg_sq().data_ptr<float>(),
                       p.grad().data_ptr<float>(), p.numel(), s});
    }
  }
  if (!run) {
    for (const Item& it : items)
      parallel_for(0, it.n, 32768,
                   [&](int64_t b, int64_t e) { adamw_update(it.p + b, it.g + b, it.m + b, it.v + b, e - b, it.s); });
    return;
  }
  int64_t total = 0;
  for (const Item& it : items) total += it.n;
  run([&](int part, int parts) {  // elements [lo, hi) of the parameters laid end to end
    const int64_t lo = total * part / parts, hi = total * (part + 1) / parts;
    int64_t start = 0;
    for (const Item& it : items) {
      const int64_t b = std::max(lo, start) - start, e = std::min(hi, start + it.n) - start;
      if (b < e) adamw_update(it.p + b, it.g + b, it.m + b, it.v + b, e - b, it.s);
      start += it.n;
    }
  });
}

}  // namespace poslab
