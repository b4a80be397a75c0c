#include "data/batches.h"

#include <sstream>

#include "util/error.h"

namespace poslab {

BatchSampler::BatchSampler(const std::vector<int32_t>& tokens, int batch_size, int block_size, uint64_t seed)
    : batch_size_(batch_size), block_size_(block_size), rng_(seed) {
  TORCH_CHECK(tokens.size() > static_cast<size_t>(block_size), "BatchSampler: ", tokens.size(),
              " tokens cannot fill a window of block_size + 1 = ", block_size + 1);
  data_ = torch::from_blob(const_cast<int32_t*>(tokens.data()), {static_cast<int64_t>(tokens.size())}, torch::kInt32)
              .to(torch::kInt64);
  window_ = torch::arange(block_size + 1, torch::kInt64);
}

Batch to_device(const Batch& batch, const torch::Device& device) {
  if (device.is_cpu()) return batch;
  const torch::Tensor both = torch::stack({batch.first, batch.second}).pin_memory().to(device, /*non_blocking=*/true);
  return {both[0], both[1]};
}

Batch BatchSampler::next() {
  const uint64_t n_starts = static_cast<uint64_t>(data_.size(0) - block_size_);  // valid starts: [0, N - T - 1]
  auto starts = torch::empty({batch_size_}, torch::kInt64);
  auto* s = starts.data_ptr<int64_t>();
  for (int b = 0; b < batch_size_; ++b) s[b] = static_cast<int64_t>(rng_() % n_starts);
  auto idx = starts.unsqueeze(1) + window_;  // (B, T + 1)
  auto w = data_.index_select(0, idx.reshape(-1)).view({batch_size_, block_size_ + 1});
  return {w.slice(1, 0, block_size_).contiguous(), w.slice(1, 1, block_size_ + 1).contiguous()};
}

std::string BatchSampler::state() const {
  std::ostringstream ss;
  ss << rng_;
  return ss.str();
}

void BatchSampler::set_state(const std::string& state) {
  std::istringstream ss(state);
  ss >> rng_;
  if (ss.fail()) throw Error("batch sampler state is malformed", "the checkpoint is damaged: resume from another one");
}

}  // namespace poslab
