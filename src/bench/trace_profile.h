// LibTorch's profiler over a scope, its Chrome trace (chrome://tracing, ui.perfetto.dev) written when the scope
// ends; scripts/profile_table.py sums it by op, and by GPU kernel. With LibTorch 2.x it is Kineto, PyTorch's own
// profiler: the ops of the calling thread (and of autograd's device threads) and, on a GPU, every kernel the GPU
// ran with its time on the device (CUPTI). With LibTorch 1.13 it is the legacy profiler: the calling thread's ops.
#pragma once

#include <string>

namespace poslab {

class TraceProfile {
 public:
  TraceProfile(const std::string& path, bool cuda);  // starts profiling
  ~TraceProfile();                                   // stops it and writes the trace to path
  TraceProfile(const TraceProfile&) = delete;
  TraceProfile& operator=(const TraceProfile&) = delete;

 private:
  struct State;
  State* state_;
};

}  // namespace poslab
