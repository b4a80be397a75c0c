#include "train/step.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <tuple>

#include "train/optim.h"
#include "util/kernel_paths.h"
#include "util/signals.h"

namespace poslab {
namespace {

// One sum across ranks per step: every gradient, the loss and a stop flag (1 on a rank with a stop request), in
// Comm's buckets. Returns whether any rank asked to stop.
bool sum_across_ranks(torch::optim::AdamW& optimizer, torch::Tensor& loss_sum, Comm& comm,
                      const torch::Device& device) {
  std::vector<torch::Tensor> tensors;
  for (auto& group : optimizer.param_groups())
    for (auto& p : group.params()) {
      // Every rank sends the same list: a parameter this batch left without a gradient sends zeros.
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      tensors.push_back(p.grad());
    }
  auto flags = torch::tensor({stop_requested() ? 1.0f : 0.0f}, torch::TensorOptions().device(device));
  tensors.push_back(loss_sum);
  tensors.push_back(flags);
  comm.sum_(tensors, "the gradient sum");
  return flags.item<float>() > 0;  // on a GPU, the copy waits for the sum the gradient norm needs anyway
}

// Gradients dropped rather than zeroed: the next backward then hands each parameter its gradient tensor (no fill
// with zeros, no add into them: two passes over every gradient saved per step).
void drop_grads(torch::optim::AdamW& optimizer) {
  for (auto& group : optimizer.param_groups())
    for (auto& p : group.params()) p.mutable_grad() = torch::Tensor();
}

// The norm, clip and AdamW on the device, nothing read back: the clip as the kernel's grad_scale, the division by
// max(1, (norm + 1e-6) / grad_clip) (clip_grad_norm_'s factor min(1, grad_clip / (norm + 1e-6)) inverted), and a
// non-finite loss or norm as its skip flag.
void step_on_device(DeviceAdamW& optimizer, const TrainConfig& t, std::optional<double> lr, StepResult& r) {
  r.unread = true;
  r.device_norm = grad_norm_on_device(optimizer);
  if (!r.device_norm.defined()) r.device_norm = torch::zeros_like(r.loss);
  r.device_skipped = torch::logical_not(torch::isfinite(r.device_norm) & torch::isfinite(r.loss)).to(torch::kFloat32);
  torch::Tensor scale;
  if (t.grad_clip > 0) scale = torch::clamp_min((r.device_norm + 1e-6) / t.grad_clip, 1.0);
  if (lr) optimizer.set_lr(*lr);
  optimizer.device_step(scale, r.device_skipped);
}

// train_step_on's update; without `lr`, the step on the device at the rates DeviceAdamW::set_lr wrote last.
StepResult step_on(GPT& model, torch::optim::AdamW& optimizer, const std::vector<Batch>& micro_batches,
                   const TrainConfig& t, std::optional<double> lr, const torch::Device& device, BatchSplit* split,
                   Comm* comm) {
  TORCH_CHECK(!micro_batches.empty(), "train_step_on: no micro-batches");
  TORCH_CHECK(lr || adamw_on_device(t, device), "train_step_on: a step without its rate runs on the device only");
  const int world = comm ? comm->size() : 1;
  const bool bf16 = t.dtype == "bfloat16";
  if (lr) set_optimizer_hparams(optimizer, *lr, t);
  auto loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  // Each rank's share of the batch weighs 1 / world of it (equal shares): the sum over ranks is the batch mean.
  const double scale = 1.0 / (static_cast<double>(micro_batches.size()) * world);
  const bool parts = split != nullptr && split->ways() > 1;
  IntraOpThreads one(parts ? 1 : 0);  // see the header
  for (const auto& [x, y] : micro_batches)
    loss_sum +=
        split ? split->forward_backward(x, y, scale, bf16, device) : slice_loss(model, x, y, scale, bf16, device);
  if (split) split->reduce_grads();
  StepResult r;
  if (world > 1) r.stop = sum_across_ranks(optimizer, loss_sum, *comm, device);
  r.loss = loss_sum;
  if (adamw_on_device(t, device)) {
    step_on_device(dynamic_cast<DeviceAdamW&>(optimizer), t, lr, r);
    drop_grads(optimizer);
    return r;
  }
  double loss = 0;
  std::tie(r.grad_norm, loss) = grad_norm_and(optimizer, loss_sum);
  r.finite = std::isfinite(r.grad_norm) && std::isfinite(loss);
  // Clipping as torch::nn::utils::clip_grad_norm_ does it, folded into the update: scale max_norm / (norm + 1e-6)
  // when that is below 1.
  const double coef = t.grad_clip > 0 ? t.grad_clip / (r.grad_norm + 1e-6) : 1.0;
  if (r.finite) {
    PartRunner run;
    if (parts) run = [split](const std::function<void(int, int)>& f) { split->run_parts(f); };
    fused_adamw_step(optimizer, std::min(coef, 1.0), run);
  }
  drop_grads(optimizer);
  return r;
}

}  // namespace

int batch_split_ways(const Config& cfg, int threads, const torch::Device& device, int processes) {
  if (device.is_cuda()) return 1;
  const int ways = cfg.run.batch_split > 0 ? cfg.run.batch_split : (cfg.model.dropout > 0 ? 1 : threads);
  return std::max(1, std::min(ways, cfg.train.batch_size / std::max(1, processes)));
}

StepResult train_step(GPT& model, torch::optim::AdamW& optimizer, BatchSampler& sampler, const TrainConfig& t,
                      double lr, const torch::Device& device, BatchSplit* split, Comm* comm) {
  const Shard shard = comm ? comm->shard() : Shard{};
  std::vector<Batch> micro_batches;
  for (int micro = 0; micro < t.grad_accum; ++micro) {
    const auto [x, y] = sampler.next();  // every rank draws the whole batch: the sampler stays the same on all
    micro_batches.push_back(to_device({shard.of(x), shard.of(y)}, device));
  }
  return train_step_on(model, optimizer, micro_batches, t, lr, device, split, comm);
}

StepResult train_step_on(GPT& model, torch::optim::AdamW& optimizer, const std::vector<Batch>& micro_batches,
                         const TrainConfig& t, double lr, const torch::Device& device, BatchSplit* split, Comm* comm) {
  return step_on(model, optimizer, micro_batches, t, lr, device, split, comm);
}

StepResult train_step_at_set_lr(GPT& model, DeviceAdamW& optimizer, const std::vector<Batch>& micro_batches,
                                const TrainConfig& t, const torch::Device& device, BatchSplit* split) {
  return step_on(model, optimizer, micro_batches, t, std::nullopt, device, split, nullptr);
}

}  // namespace poslab
