// Compiled with -fopenmp (CMakeLists.txt), so that ATen's inline OpenMP loop is compiled in: see parallel.h.
#include "util/parallel.h"

#include <ATen/Parallel.h>

#ifndef _OPENMP
#error "src/util/parallel.cpp must be compiled with -fopenmp (CMakeLists.txt sets it)"
#endif

namespace poslab {

void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& f) {
  at::parallel_for(begin, end, grain, f);
}

int parallel_threads() { return at::get_num_threads(); }

}  // namespace poslab
