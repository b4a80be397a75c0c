#include "train/evaluate.h"

#include <algorithm>

#include "data/batches.h"
#include "ops/autocast.h"
#include "train/step.h"

namespace poslab {

double estimate_loss(GPT& model, const std::vector<int32_t>& tokens, int batches, int batch_size, uint64_t seed,
                     bool bf16, const torch::Device& device, const Shard& shard, BatchSplit* split) {
  const bool was_training = model->is_training();
  model->eval();
  torch::NoGradGuard no_grad;
  BatchSampler sampler(tokens, batch_size, static_cast<int>(model->cfg.block_size), seed);
  auto total = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
  for (int i = 0; i < batches; ++i) {
    auto [x, y] = sampler.next();
    std::tie(x, y) = to_device({shard.of(x), shard.of(y)}, device);
    torch::Tensor loss;
    if (split != nullptr && device.is_cpu()) {
      loss = split->loss(x, y, 1.0 / shard.world, bf16, device);
    } else {
      AutocastGuard autocast(bf16, device.is_cuda());
      loss = model->forward_loss(x, y, 1.0 / shard.world);  // no (B, T, V) logits on CPU
    }
    total += loss.to(torch::kFloat64);  // summed where it is: one copy to the host at the end
  }
  model->train(was_training);
  return total.item<double>() / batches;
}

PositionLoss evaluate_positions(GPT& model, const std::vector<int32_t>& tokens, int batches, int batch_size,
                                uint64_t seed, bool bf16, const torch::Device& device, int64_t length, int64_t shift,
                                const std::function<void(int)>& scored) {
  const bool was_training = model->is_training();
  model->eval();
  torch::NoGradGuard no_grad;
  const int64_t T = length > 0 ? length : model->cfg.block_size;
  BatchSampler sampler(tokens, batch_size, static_cast<int>(T), seed);
  auto sum = torch::zeros({T}, torch::TensorOptions().dtype(torch::kFloat64).device(device));  // (T,)
  for (int i = 0; i < batches; ++i) {
    auto [x, y] = to_device(sampler.next(), device);
    torch::Tensor logits;
    {
      AutocastGuard autocast(bf16, device.is_cuda());
      logits = model->forward(x, shift);  // (B, T, V)
    }
    auto nll = torch::nn::functional::cross_entropy(
        logits.reshape({-1, logits.size(-1)}).to(torch::kFloat32), y.reshape(-1),
        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));  // (B*T,)
    sum += nll.view({-1, T}).sum(0).to(torch::kFloat64);
    if (scored) scored(i + 1);
  }
  sum = sum.to(torch::kCPU);
  model->train(was_training);
  PositionLoss r;
  r.tokens = static_cast<int64_t>(batches) * batch_size * T;
  auto mean = sum / (static_cast<double>(batches) * batch_size);
  r.by_position.assign(mean.data_ptr<double>(), mean.data_ptr<double>() + T);
  r.loss = mean.mean().item<double>();
  return r;
}

ShiftLoss evaluate_shifts(GPT& model, const std::vector<int32_t>& tokens, int batches, int batch_size, uint64_t seed,
                          bool bf16, const torch::Device& device, const std::vector<int64_t>& shifts,
                          const std::function<void(int)>& scored) {
  ShiftLoss r;
  r.shifts = shifts;
  const int64_t max_shift = shifts.empty() ? 0 : *std::max_element(shifts.begin(), shifts.end());
  r.length = model->cfg.block_size - max_shift;
  int before = 0;  // batches of the shifts already scored
  for (int64_t s : shifts) {
    r.at.push_back(evaluate_positions(model, tokens, batches, batch_size, seed, bf16, device, r.length, s, [&](int n) {
      if (scored) scored(before + n);
    }));
    before += batches;
  }
  return r;
}

}  // namespace poslab
