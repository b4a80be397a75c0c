// The machine under the run: BLAS choice, CPU kernel type, threads, device.
#pragma once

#include <string>

namespace poslab {

// OpenBLAS misdetects these virtual CPUs (as Prescott: ~25 GFLOP/s instead of ~150) unless
// OPENBLAS_CORETYPE is set before the library loads, and its thread pool competes with LibTorch's unless
// OPENBLAS_NUM_THREADS=1. An executable that links platform.cpp answers OpenBLAS's getenv with these values
// (SkylakeX with AVX-512, Haswell with AVX2; one thread) where the environment leaves them unset, so OpenBLAS
// starts with them and LibTorch starts once. This checks that OpenBLAS asked for them; had it not, it sets them and
// re-executes the program once, so users never sit on the slow path. Values the user set win; POSLAB_NO_REEXEC=1
// leaves OpenBLAS to its own choices.
void ensure_fast_blas(int argc, char** argv);

// The variable as the process's environment holds it, nullptr when absent: getenv without poslab's OpenBLAS values.
const char* environment_value(const char* name);

// glibc's malloc hands tensors above 128 KiB back to the kernel when they are freed, so every training step
// faults in and zeroes its activations afresh (~15k page faults per default step, 1.1 s of system time per
// 30 steps, measured; two slice threads then also wait on each other's faults). This keeps freed memory in the process
// for reuse: allocations up to 32 MiB stay in the heap and the heap is not trimmed.
void keep_freed_memory();

// The OPENBLAS_CORETYPE this CPU should use ("SkylakeX", "Haswell"), or "" to leave OpenBLAS's own choice.
std::string preferred_openblas_coretype();

// One line: which BLAS library is loaded, its core type and build config, e.g.
// "OpenBLAS 0.3.21 (/usr/lib/.../libblas.so.3) core SkylakeX", or "MKL (inside LibTorch)" with PyTorch's LibTorch.
std::string blas_summary();

// Threads for config value `threads` (0 = this process's share of the cores: all of them divided by the
// `processes_here` processes of a run on this machine, at least 1), applied to LibTorch's intra-op pool. With `say`,
// a warning where the threads, or the processes, are more than the cores (one process of a run says it for all).
int apply_threads(int threads, int processes_here = 1, bool say = true);

// OpenBLAS's thread count (no-ops / 0 when the BLAS is not OpenBLAS).
void set_blas_threads(int n);
int blas_threads();

// Whether this CPU multiplies bf16 in hardware (AVX512-BF16 or AMX): without, oneDNN emulates bf16 and a bf16
// step is several times slower than a float32 one (measured on an AVX2-only AMD EPYC: 7.7 s against ~0.3 s).
bool cpu_has_native_bf16();

// The CPU's model name and its class by the flags that matter here: "AMD EPYC 9R14 (AVX512-BF16)"; the class is
// AMX, AVX512-BF16, AVX-512, AVX2 or "no AVX2".
std::string cpu_description();

// train.dtype for a device ("cpu" | "cuda"): auto is bfloat16 on CUDA and on CPUs with native bf16, else float32.
std::string resolve_dtype(const std::string& dtype, const std::string& device);

// "cpu" or "cuda" for run.device (auto picks CUDA when present).
// `key` names the setting in errors (run.device, --device).
std::string resolve_device(const std::string& device, const std::string& key = "run.device");

}  // namespace poslab
