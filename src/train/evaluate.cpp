#include "train/evaluate.h"

#include "data/batches.h"
#include "model/autocast.h"

namespace poslab {

double estimate_loss(GPT& model, const std::vector<int32_t>& tokens, int batches, int batch_size, uint64_t seed,
                     bool bf16, const torch::Device& device) {
  const bool was_training = model->is_training();
  model->eval();
  torch::NoGradGuard no_grad;
  BatchSampler sampler(tokens, batch_size, static_cast<int>(model->cfg.block_size), seed);
  auto total = torch::zeros({}, torch::kFloat64);
  for (int i = 0; i < batches; ++i) {
    auto [x, y] = sampler.next();
    torch::Tensor logits;
    {
      AutocastGuard autocast(bf16, device.is_cuda());
      logits = model->forward(x.to(device));
    }
    total += GPTImpl::loss(logits, y.to(device)).to(torch::kCPU, torch::kFloat64);
  }
  model->train(was_training);
  return total.item<double>() / batches;
}

}  // namespace poslab
