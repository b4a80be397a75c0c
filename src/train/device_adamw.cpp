#include "train/device_adamw.h"

#include <ATen/record_function.h>
#include <torch/version.h>

#include <optional>
#include <tuple>
#include <utility>

#include "train/optim.h"

// LibTorch 2.4 brought the fused kernel to the CPU (2.0 had it for CUDA only).
#define POSLAB_FUSED_ADAMW (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4))

namespace poslab {

std::string DeviceAdamW::unsupported(const torch::Device& device) {
#if POSLAB_FUSED_ADAMW
  if (device.is_cpu() || device.is_cuda()) return "";
  return "LibTorch's fused AdamW runs on the CPU and CUDA, not on " + device.str();
#else
  (void)device;
  return "LibTorch's fused AdamW (at::_fused_adamw_) needs LibTorch 2.4 or later; this poslab is built on "
         "LibTorch " TORCH_VERSION;
#endif
}

void DeviceAdamW::set_lr(double lr) {
  if (lrs_.size() != param_groups().size()) lrs_.assign(param_groups().size(), torch::Tensor());
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const auto& params = param_groups()[g].params();
    if (params.empty()) continue;
    torch::Tensor& group_lr = lrs_[g];
    if (!group_lr.defined() || group_lr.device() != params[0].device())
      group_lr = torch::empty({}, params[0].options().dtype(torch::kFloat32));
    group_lr.fill_(lr * (g < lr_scales_.size() ? lr_scales_[g] : 1.0));  // on a GPU, a queued fill: no wait
  }
}

void DeviceAdamW::device_step(const torch::Tensor& grad_scale, const torch::Tensor& skip) {
  RECORD_FUNCTION("poslab::device_adamw_step", std::vector<c10::IValue>());
#if POSLAB_FUSED_ADAMW
  torch::NoGradGuard no_grad;
  size_t total = 0;
  for (const auto& group : param_groups()) total += group.params().size();
  if (steps_.size() != total) steps_.assign(total, Steps{});
  size_t index = 0;
  TORCH_CHECK(lrs_.size() == param_groups().size(), "DeviceAdamW: device_step before set_lr");
  for (size_t g = 0; g < param_groups().size(); ++g) {
    auto& group = param_groups()[g];
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    TORCH_CHECK(!o.amsgrad(), "DeviceAdamW: amsgrad is not supported");
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, counts;
    for (auto& p : group.params()) {
      Steps& steps = steps_[index++];
      if (!p.grad().defined()) continue;
      auto& st = adamw_state(*this, p);
      if (steps.state != &st || !steps.count.defined() || steps.count.device() != p.device()) {
        steps.state = &st;
        steps.count = torch::full({}, static_cast<float>(st.step()), p.options().dtype(torch::kFloat32));
      }
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(st.exp_avg());
      exp_avg_sqs.push_back(st.exp_avg_sq());
      counts.push_back(steps.count);
    }
    if (params.empty()) continue;
    const torch::Tensor& group_lr = lrs_[g];
    TORCH_CHECK(group_lr.defined() && group_lr.device() == params[0].device(),
                "DeviceAdamW: the learning rate is not on the parameters' device (set_lr after a move)");
    // The counts the kernel reads are this step's; a skipped step adds 0 (the kernel then changes nothing).
    if (skip.defined())
      torch::_foreach_add_(counts, std::vector<torch::Tensor>(counts.size(), 1 - skip));
    else
      torch::_foreach_add_(counts, 1);
    std::optional<torch::Tensor> scale, found_inf;
    if (grad_scale.defined()) scale = grad_scale;
    if (skip.defined()) found_inf = skip;
    at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, {}, counts, group_lr, std::get<0>(o.betas()),
                      std::get<1>(o.betas()), o.weight_decay(), o.eps(), /*amsgrad=*/false, /*maximize=*/false, scale,
                      found_inf);
  }
#else
  (void)grad_scale, (void)skip;
  TORCH_CHECK(false, unsupported(torch::kCPU));
#endif
}

void DeviceAdamW::write_steps_into_state() const {
  std::vector<torch::optim::AdamWParamState*> into;
  std::vector<torch::Tensor> counts;
  size_t index = 0;
  for (const auto& group : param_groups())
    for (const auto& p : group.params()) {
      if (index >= steps_.size()) break;
      const Steps& steps = steps_[index++];
      if (!steps.count.defined()) continue;
      const auto it = state_.find(optimizer_state_key(p));
      if (it == state_.end() || it->second.get() != steps.state) continue;  // replaced since: that state is current
      into.push_back(static_cast<torch::optim::AdamWParamState*>(it->second.get()));
      counts.push_back(steps.count);
    }
  if (counts.empty()) return;
  const torch::Tensor host = torch::stack(counts).to(torch::kCPU).contiguous();  // one copy from the device
  const float* c = host.data_ptr<float>();
  for (size_t i = 0; i < into.size(); ++i) into[i]->step(static_cast<int64_t>(c[i]));
}

void DeviceAdamW::save(torch::serialize::OutputArchive& archive) const {
  write_steps_into_state();
  torch::optim::AdamW::save(archive);
}

void DeviceAdamW::load(torch::serialize::InputArchive& archive) {
  torch::optim::AdamW::load(archive);
  steps_.clear();  // read again from the loaded state at the next device_step
}

}  // namespace poslab
