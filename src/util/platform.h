// The machine under the run: BLAS choice, CPU kernel type, threads, device.
#pragma once

#include <string>

namespace poslab {

// OpenBLAS misdetects these virtual CPUs (as Prescott: ~25 GFLOP/s instead of ~150) unless
// OPENBLAS_CORETYPE is set before the library loads. When it is unset and the CPU has AVX-512 (SkylakeX)
// or AVX2 (Haswell), this sets it and re-executes the program once, so users never sit on the slow path.
// Respects a value the user set; POSLAB_NO_REEXEC=1 turns it off.
void ensure_fast_blas(int argc, char** argv);

// The OPENBLAS_CORETYPE this CPU should use ("SkylakeX", "Haswell"), or "" to leave OpenBLAS's own choice.
std::string preferred_openblas_coretype();

// One line: which BLAS library is loaded, its core type and build config, e.g.
// "OpenBLAS 0.3.21 (/usr/lib/.../libblas.so.3) core SkylakeX".
std::string blas_summary();

// Threads for config value `threads` (0 = all cores); also applied to LibTorch.
int apply_threads(int threads);

// "cpu" or "cuda" for run.device (auto picks CUDA when present).
std::string resolve_device(const std::string& device);

}  // namespace poslab
