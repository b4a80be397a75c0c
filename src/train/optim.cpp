#include "train/optim.h"

namespace poslab {

ParamGroups split_param_groups(const GPT& model, bool decay_position_table) {
  ParamGroups g;
  for (const auto& p : model->named_parameters()) {
    if (!p.value().requires_grad()) continue;
    const bool is_wpe = p.key() == "wpe.weight";
    const bool decay = is_wpe ? decay_position_table : p.value().dim() >= 2;
    (decay ? g.decay_names : g.no_decay_names).push_back(p.key());
    (decay ? g.decay : g.no_decay).push_back(p.value());
  }
  return g;
}

std::unique_ptr<torch::optim::AdamW> make_optimizer(const GPT& model, const TrainConfig& t) {
  const ParamGroups g = split_param_groups(model, t.decay_position_table);
  auto options = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(t.lr).betas({t.beta1, t.beta2}).eps(1e-8).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(g.decay, options(t.weight_decay));
  groups.emplace_back(g.no_decay, options(0.0));
  return std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(t.lr));
}

void set_optimizer_hparams(torch::optim::AdamW& opt, double lr, const TrainConfig& t) {
  auto& groups = opt.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    auto& o = static_cast<torch::optim::AdamWOptions&>(groups[i].options());
    o.lr(lr);
    o.weight_decay(i == 0 ? t.weight_decay : 0.0);
    o.betas({t.beta1, t.beta2});
  }
}

}  // namespace poslab
