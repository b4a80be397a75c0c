#include "bench/trace_profile.h"

#include <spdlog/spdlog.h>
#include <torch/version.h>

#include <memory>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/autograd/profiler_kineto.h>
#else
#include <torch/csrc/autograd/profiler_legacy.h>
#endif

namespace poslab {

#if TORCH_VERSION_MAJOR >= 2
namespace prof = torch::profiler::impl;

struct TraceProfile::State {
  std::string path;
};

TraceProfile::TraceProfile(const std::string& path, bool cuda) : state_(new State{path}) {
  const prof::ProfilerConfig config(prof::ProfilerState::KINETO);
  std::set<prof::ActivityType> activities{prof::ActivityType::CPU};
  if (cuda) activities.insert(prof::ActivityType::CUDA);
  torch::autograd::profiler::prepareProfiler(config, activities);
  torch::autograd::profiler::enableProfiler(config, activities);
}

TraceProfile::~TraceProfile() {
  try {
    torch::autograd::profiler::disableProfiler()->save(state_->path);
  } catch (const std::exception& e) {  // a destructor reports and goes on: the bench's figures stand
    spdlog::error("profile: the trace was not written to {} ({})", state_->path, e.what());
  }
  delete state_;
}

#else
struct TraceProfile::State {
  torch::autograd::profiler::RecordProfile record;
};

TraceProfile::TraceProfile(const std::string& path, bool cuda) : state_(new State{path}) {}
TraceProfile::~TraceProfile() { delete state_; }  // RecordProfile writes the trace when destroyed
#endif

}  // namespace poslab
