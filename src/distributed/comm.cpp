#include "distributed/comm.h"

// c10d's Gloo (and NCCL) declarations are compiled only with these defined, as in LibTorch's own build. Defined
// here, after the precompiled torch/torch.h, which does not depend on them.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>

#include "build_config.h"
#if POSLAB_WITH_CUDA
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "util/error.h"

namespace poslab {
namespace {

using Clock = std::chrono::steady_clock;

// The common base of the Gloo and NCCL process groups: ProcessGroup in LibTorch 1.x, Backend in 2.x.
#if TORCH_VERSION_MAJOR >= 2
using ProcessGroupBase = c10d::Backend;
#else
using ProcessGroupBase = c10d::ProcessGroup;
#endif

// c10::Error's message without the C++ backtrace LibTorch 1.x appends.
std::string message_of(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) return c10->what_without_backtrace();
  return e.what();
}

// Gloo's network device: the interface GLOO_SOCKET_IFNAME names (as in PyTorch), loopback when every rank is on
// this machine, else the address this host's name resolves to.
std::shared_ptr<::gloo::transport::Device> gloo_device(const DistEnv& env) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"))
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  if (env.world_size == env.local_world_size) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

}  // namespace

torch::Tensor Shard::of(const torch::Tensor& batch) const {
  if (world == 1) return batch;
  return batch.narrow(0, begin(batch.size(0)), size(batch.size(0)));
}

void check_divides(const std::string& key, int64_t rows, int world, const std::string& origin) {
  if (rows % world != 0)
    throw Error(origin + key + " = " + std::to_string(rows) + " does not divide among " + std::to_string(world) +
                    " processes: every rank trains an equal share of each batch",
                "pick a " + key + " that is a multiple of " + std::to_string(world) + ", or run " +
                    "on a number of processes that divides " + std::to_string(rows));
}

struct Comm::Group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<ProcessGroupBase> pg;  // Gloo or NCCL
  int step_fd = -1;                         // POSLAB_STEP_FILE, written by set_step
  ~Group() {
    if (step_fd >= 0) ::close(step_fd);
  }
};

Comm::Comm() = default;
Comm::~Comm() = default;

Comm::Comm(const DistEnv& env, const torch::Device& device, std::chrono::seconds timeout)
    : rank_(env.rank), size_(env.world_size), label_(rank_label(env)) {
  if (size_ == 1) return;
  group_ = std::make_unique<Group>();
  const auto t0 = Clock::now();
  try {
    // Rank 0 hosts the store, unless torchrun's agent already does (then every rank is a client under a prefix).
    c10d::TCPStoreOptions opts;
    opts.port = static_cast<uint16_t>(env.master_port);
    opts.isServer = !env.agent_store && rank_ == 0;
    opts.numWorkers = size_;
    opts.timeout = timeout;
    c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, opts);
    if (env.agent_store) store = c10::make_intrusive<c10d::PrefixStore>(env.store_prefix, store);
    group_->store = c10::make_intrusive<c10d::PrefixStore>("poslab", store);
#if POSLAB_WITH_CUDA
    if (device.is_cuda()) {
      auto nccl = c10d::ProcessGroupNCCL::Options::create();
      nccl->timeout = timeout;
      group_->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(group_->store, rank_, size_, nccl);
      backend_ = "nccl";
    }
#endif
    if (!group_->pg) {
      auto gloo = c10d::ProcessGroupGloo::Options::create();
      gloo->timeout = timeout;
      gloo->devices.push_back(gloo_device(env));
      group_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(group_->store, rank_, size_, gloo);
      backend_ = "gloo";
    }
    // Each rank says where it runs, so that an error can name the rank it lost and its host.
    const std::string here = host_and_address(env.master_addr, env.master_port);
    group_->store->set("host/" + std::to_string(rank_), std::vector<uint8_t>(here.begin(), here.end()));
    for (int r = 0; r < size_; ++r) {
      const std::vector<uint8_t> v = group_->store->get("host/" + std::to_string(r));
      hosts_.emplace_back(v.begin(), v.end());
    }
  } catch (const std::exception& e) {
    throw Error("could not join the " + std::to_string(size_) + " processes at " + env.master_addr + ":" +
                    std::to_string(env.master_port) + " (" + env.source + "): " + message_of(e),
                "check MASTER_ADDR / MASTER_PORT (rank 0's host, a free port) and that every rank was started; "
                "run.dist_timeout_s bounds the wait");
  }
  if (const char* path = std::getenv("POSLAB_STEP_FILE")) group_->step_fd = ::open(path, O_WRONLY | O_CLOEXEC);
  spdlog::info("distributed: {} processes ({} per machine), {} backend, rendezvous {}:{} ({}) in {:.2f} s", size_,
               env.local_world_size, backend_, env.master_addr, env.master_port, env.source,
               std::chrono::duration<double>(Clock::now() - t0).count());
  if (env.local_world_size < size_) {
    std::string where;
    for (int r = 0; r < size_; ++r) where += (r ? ", " : "") + std::to_string(r) + " " + hosts_[r];
    spdlog::info("distributed: ranks on {}", where);
  }
}

void Comm::fail(const std::string& what, const std::string& why) const {
  const std::string peer = lost_peer(why, hosts_, rank_);
  throw Error(what + (step_ >= 0 ? " at step " + std::to_string(step_) : "") + " failed" +
                  (peer.empty() ? "" : ", " + peer + " is gone") + ": " + why,
              "another process of the run stopped or died (see its error; with --nproc the launcher names it); the "
              "last checkpoint resumes with any number of processes");
}

void Comm::sum_(const std::vector<torch::Tensor>& tensors, const std::string& what) {
  if (size_ == 1 || tensors.empty()) return;
  const auto t0 = Clock::now();
  try {
    // Buckets of consecutive tensors of one dtype, flattened, all launched before the first wait.
    std::vector<std::vector<torch::Tensor>> members;
    std::vector<std::vector<torch::Tensor>> flats;
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    size_t i = 0;
    while (i < tensors.size()) {
      std::vector<torch::Tensor> bucket{tensors[i]};
      int64_t bytes = tensors[i].nbytes();
      for (++i; i < tensors.size() && tensors[i].scalar_type() == bucket[0].scalar_type() &&
                bytes + static_cast<int64_t>(tensors[i].nbytes()) <= kBucketBytes;
           ++i) {
        bucket.push_back(tensors[i]);
        bytes += tensors[i].nbytes();
      }
      std::vector<torch::Tensor> flat_views;
      for (const auto& t : bucket) flat_views.push_back(t.reshape({-1}));
      flats.push_back({torch::cat(flat_views)});
      members.push_back(std::move(bucket));
      works.push_back(group_->pg->allreduce(flats.back()));
    }
    for (size_t b = 0; b < works.size(); ++b) {
      works[b]->wait();
      int64_t offset = 0;
      for (auto& t : members[b]) {
        t.copy_(flats[b][0].narrow(0, offset, t.numel()).view_as(t));
        offset += t.numel();
      }
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail(what, message_of(e));
  }
  seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
  ++calls_;
}

void Comm::broadcast_(const std::vector<torch::Tensor>& tensors, const std::string& what) {
  if (size_ == 1 || tensors.empty()) return;
  const auto t0 = Clock::now();
  try {
    for (const auto& t : tensors) {
      std::vector<torch::Tensor> one{t.is_contiguous() ? t : t.contiguous()};
      group_->pg->broadcast(one)->wait();
      if (!t.is_contiguous()) t.copy_(one[0]);
    }
  } catch (const std::exception& e) {
    fail(what, message_of(e));
  }
  seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
  ++calls_;
}

void Comm::barrier(const std::string& what) {
  if (size_ == 1) return;
  try {
    group_->pg->barrier()->wait();
  } catch (const std::exception& e) {
    fail(what, message_of(e));
  }
}

void Comm::set_step(int64_t step) {
  step_ = step;
  if (group_ && group_->step_fd >= 0) {
    const ssize_t n = ::pwrite(group_->step_fd, &step, sizeof step, static_cast<off_t>(rank_) * sizeof step);
    (void)n;  // the launcher's failure line loses its step, nothing else
  }
}

}  // namespace poslab
