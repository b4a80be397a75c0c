#include "model/batch_split.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "model/direct_pass.h"
#include "ops/autocast.h"
#include "util/kernel_paths.h"

namespace poslab {

torch::Tensor slice_loss(GPT& model, const torch::Tensor& x, const torch::Tensor& y, double scale, bool bf16,
                         const torch::Device& device, DirectPass* direct, bool backward) {
  if (direct != nullptr)
    return backward ? direct->forward_backward(x, y, scale, bf16) : direct->loss(x, y, scale, bf16);
  torch::Tensor loss;
  {
    std::optional<torch::NoGradGuard> no_grad;
    if (!backward) no_grad.emplace();
    AutocastGuard autocast(bf16, device.is_cuda());
    loss = model->forward_loss(x.to(device), y.to(device), scale);
  }
  if (backward) loss.backward();
  return loss.detach();
}

// Runs one task at a time on its own thread, with one intra-op thread.
class BatchSplit::Worker {
 public:
  Worker() : thread_([this] { loop(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void start(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = std::move(task);
    }
    wake_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return !task_; });
  }

 private:
  void loop() {
    bool single = false;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || task_; });
      if (stop_) return;
      lock.unlock();
      if (!single) {  // this thread's own OpenMP setting (the caller has set the process-wide count to 1 by now)
        at::set_num_threads(1);
        single = true;
      }
      task_();  // the task catches its own exceptions
      lock.lock();
      task_ = nullptr;
      done_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::function<void()> task_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it uses exist
};

BatchSplit::~BatchSplit() = default;

BatchSplit::BatchSplit(GPT& model, int ways) : model_(model), ways_(std::max(1, ways)) {
  if (ways_ == 1) return;
  // Building a replica draws its (discarded) initial weights from the default generator: put its state back,
  // so that a run with and without the split sees the same random numbers.
  auto gen = at::detail::getDefaultCPUGenerator();
  const torch::Tensor state = gen.get_state();
  for (int i = 1; i < ways_; ++i) {
    replicas_.emplace_back(model->cfg, model->wte->weight.size(0));
    workers_.push_back(std::make_unique<Worker>());
  }
  gen.set_state(state);
  share_parameters();
}

void BatchSplit::share_parameters() {
  const auto master = model_->parameters();
  for (auto& r : replicas_) {
    auto params = r->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      params[i].requires_grad_(master[i].requires_grad());  // frozen where the model's is (train.trainable)
      if (params[i].data_ptr() == master[i].data_ptr()) continue;
      torch::NoGradGuard no_grad;
      params[i].set_data(master[i]);
    }
  }
}

void BatchSplit::run_parts(const std::function<void(int part, int parts)>& f) {
  if (ways_ == 1) return f(0, 1);
  IntraOpThreads one(1);  // one intra-op thread per part
  std::vector<std::exception_ptr> errors(ways_);
  for (int i = 1; i < ways_; ++i)
    workers_[i - 1]->start([&, i] {
      try {
        f(i, ways_);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  try {
    f(0, ways_);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (int i = 1; i < ways_; ++i) workers_[i - 1]->wait();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

DirectPass* BatchSplit::direct_pass(int i, bool bf16, const torch::Device& device) {
  if (kernel_paths().step != "direct" || !DirectPass::unsupported(model_, bf16, device).empty()) return nullptr;
  if (direct_.empty()) direct_.resize(ways_);
  if (!direct_[i]) direct_[i] = std::make_unique<DirectPass>(i == 0 ? model_ : replicas_[i - 1]);
  return direct_[i].get();
}

torch::Tensor BatchSplit::forward_backward(const torch::Tensor& x, const torch::Tensor& y, double scale, bool bf16,
                                           const torch::Device& device) {
  return run_slices(x, y, scale, bf16, device, true);
}

torch::Tensor BatchSplit::loss(const torch::Tensor& x, const torch::Tensor& y, double scale, bool bf16,
                               const torch::Device& device) {
  return run_slices(x, y, scale, bf16, device, false);
}

torch::Tensor BatchSplit::run_slices(const torch::Tensor& x, const torch::Tensor& y, double scale, bool bf16,
                                     const torch::Device& device, bool backward) {
  if (ways_ == 1) return slice_loss(model_, x, y, scale, bf16, device, direct_pass(0, bf16, device), backward);
  share_parameters();  // a checkpoint load may have replaced the model's storage
  const auto xs = x.chunk(ways_, 0), ys = y.chunk(ways_, 0);
  const int n = static_cast<int>(xs.size());  // chunk() gives fewer slices when the batch is small
  const double batch = static_cast<double>(x.size(0));
  std::vector<torch::Tensor> losses(n);
  for (int i = 1; i < n; ++i) replicas_[i - 1]->train(model_->is_training());
  std::vector<DirectPass*> direct(n);
  for (int i = 0; i < n; ++i) direct[i] = direct_pass(i, bf16, device);
  run_parts([&](int i, int) {
    if (i >= n) return;
    GPT& m = i == 0 ? model_ : replicas_[i - 1];
    losses[i] = slice_loss(m, xs[i], ys[i], scale * xs[i].size(0) / batch, bf16, device, direct[i], backward);
  });
  torch::Tensor total = losses[0];
  for (int i = 1; i < n; ++i) total = total + losses[i];
  return total;
}

void BatchSplit::reduce_grads() {
  if (ways_ == 1) return;
  torch::NoGradGuard no_grad;
  const auto master = model_->parameters();
  // Each parameter's sum, its replicas' gradients added into the model's in replica order; float32 CPU ones in
  // parallel over the parts' threads, each part a range of the elements laid end to end (the same sums, in the
  // same order, as one thread would add them).
  struct Item {
    float* into;
    std::vector<const float*> from;
    int64_t n;
  };
  std::vector<Item> items;
  int64_t total = 0;
  std::vector<std::vector<torch::Tensor>> replica_params;
  for (auto& r : replicas_) replica_params.push_back(r->parameters());
  auto fast = [](const torch::Tensor& g) {
    return g.device().is_cpu() && g.scalar_type() == torch::kFloat32 && g.is_contiguous();
  };
  for (size_t i = 0; i < master.size(); ++i) {
    torch::Tensor& into = master[i].mutable_grad();
    std::vector<torch::Tensor> grads;
    for (const auto& params : replica_params)
      if (params[i].grad().defined()) grads.push_back(params[i].grad());
    if (!grads.empty() && !into.defined()) {
      into = grads.front().clone();
      grads.erase(grads.begin());
    }
    if (grads.empty()) continue;
    if (!fast(into) || !std::all_of(grads.begin(), grads.end(), fast)) {
      for (const auto& g : grads) into.add_(g);
      continue;
    }
    Item item{into.data_ptr<float>(), {}, into.numel()};
    for (const auto& g : grads) item.from.push_back(g.data_ptr<float>());
    total += item.n;
    items.push_back(std::move(item));
  }
  run_parts([&](int part, int parts) {
    const int64_t lo = total * part / parts, hi = total * (part + 1) / parts;
    int64_t start = 0;
    for (const Item& it : items) {
      const int64_t b = std::max(lo, start) - start, e = std::min(hi, start + it.n) - start;
      for (const float* from : it.from)
        for (int64_t k = b; k < e; ++k) it.into[k] += from[k];
      start += it.n;
    }
  });
  for (auto& params : replica_params)
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
}

IntraOpThreads::IntraOpThreads(int n) {
  if (n <= 0) return;
  previous_ = at::get_num_threads();
  if (previous_ != n) at::set_num_threads(n);  // (1.13 rebuilds its pthreadpool at every call: only on a change)
}

IntraOpThreads::~IntraOpThreads() {
  if (previous_ > 0 && previous_ != at::get_num_threads()) at::set_num_threads(previous_);
}

}  // namespace poslab
