#include "train/step.h"

#include <cmath>
#include <limits>

#include "model/autocast.h"
#include "train/optim.h"

namespace poslab {

StepResult train_step(GPT& model, torch::optim::AdamW& optimizer, BatchSampler& sampler, const TrainConfig& t,
                         double lr, const torch::Device& device) {
  const bool bf16 = t.dtype == "bfloat16";
  set_optimizer_hparams(optimizer, lr, t);
  auto loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  for (int micro = 0; micro < t.grad_accum; ++micro) {
    auto [x, y] = sampler.next();
    torch::Tensor logits;
    {
      AutocastGuard autocast(bf16, device.is_cuda());
      logits = model->forward(x.to(device));  // (B, T, V)
    }
    auto loss = GPTImpl::loss(logits, y.to(device)) / t.grad_accum;
    loss.backward();
    loss_sum += loss.detach();
  }
  StepResult r;
  r.loss = loss_sum;
  // The norm is needed anyway to clip; with clipping off, an infinite max norm measures without scaling.
  r.grad_norm = torch::nn::utils::clip_grad_norm_(model->parameters(),
                                                  t.grad_clip > 0 ? t.grad_clip : std::numeric_limits<double>::infinity());
  r.finite = std::isfinite(r.grad_norm) && std::isfinite(loss_sum.item<double>());
  if (r.finite) optimizer.step();
  optimizer.zero_grad();
  return r;
}

}  // namespace poslab
