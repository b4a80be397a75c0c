// poslab's kernels split their loops over LibTorch's intra-op threads through this function.
//
// at::parallel_for is inline: its `#pragma omp parallel` (LibTorch 1.13 and 2.x both use OpenMP on Linux) is
// compiled into the calling file, and in a file built without -fopenmp it quietly runs the whole range on one
// thread. poslab's files are built without it (it would change the precompiled LibTorch header), so they call
// this one, whose definition is compiled with -fopenmp and linked against the OpenMP runtime LibTorch uses: the
// same threads, the same count (at::set_num_threads), the same rules as LibTorch's own ops.
#pragma once

#include <cstdint>
#include <functional>

namespace poslab {

// parallel_for(begin, end, grain, f): f(b, e) on consecutive chunks of [begin, end), at most one per intra-op
// thread and none shorter than grain (one chunk, on this thread, when the range is no longer than grain, when
// the intra-op thread count is 1, or inside another parallel region). An exception thrown by f is rethrown here.
void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& f);

// The grain of poslab's elementwise loops (GELU, residual adds, bf16 widening and narrowing): ranges no longer than
// this run on one thread, where waking the others would cost more than the work.
constexpr int64_t kElementwiseGrain = 16384;

// The number of threads parallel_for splits a long range over on this thread (at::get_num_threads()).
int parallel_threads();

}  // namespace poslab
