#include "model/sample.h"

#include <ATen/CPUGeneratorImpl.h>

namespace poslab {

std::vector<int> generate(GPT& model, std::vector<int> ids, const SampleOptions& opt, int start_id,
                          const std::function<void(int)>& on_token) {
  TORCH_CHECK(opt.temperature >= 0, "temperature must be >= 0, got ", opt.temperature);
  TORCH_CHECK(opt.top_k >= 0, "top_k must be >= 0, got ", opt.top_k);
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  if (ids.empty()) ids.push_back(start_id);
  auto gen = at::detail::createCPUGenerator(opt.seed);
  const auto device = model->wte->weight.device();
  const int64_t block = model->cfg.block_size;
  for (int n = 0; n < opt.tokens; ++n) {
    const int64_t start = std::max<int64_t>(0, static_cast<int64_t>(ids.size()) - block);
    std::vector<int64_t> ctx(ids.begin() + start, ids.end());
    auto idx = torch::tensor(ctx, torch::kInt64).unsqueeze(0).to(device);                         // (1, T)
    auto logits = model->forward(idx).select(1, -1).squeeze(0).to(torch::kCPU, torch::kFloat32);  // (V,)
    int next;
    if (opt.temperature == 0) {
      next = static_cast<int>(logits.argmax().item<int64_t>());
    } else {
      // In double, from the largest logit: a tiny temperature leaves the argmax at 0 and the rest at -inf (in float,
      // logits / 1e-45 overflow and softmax reads NaN), a huge one leaves all near 0 (uniform).
      logits = (logits.to(torch::kFloat64) - logits.max().item<double>()) / opt.temperature;
      if (opt.top_k > 0 && opt.top_k < logits.size(0)) {
        const double kth = std::get<0>(logits.topk(opt.top_k)).min().item<double>();
        logits = logits.masked_fill(logits < kth, -std::numeric_limits<float>::infinity());
      }
      next = static_cast<int>(torch::multinomial(torch::softmax(logits, 0), 1, false, gen).item<int64_t>());
    }
    ids.push_back(next);
    if (on_token) on_token(next);
  }
  model->train(was_training);
  return ids;
}

}  // namespace poslab
