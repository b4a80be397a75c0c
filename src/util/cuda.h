// What a CUDA build of LibTorch adds: the GPU's facts and the CUDA generator's state. Every function here is safe
// to call in a CPU-only build and on a machine without a GPU (Debian's LibTorch 1.13 is CPU-only; PyTorch's own
// LibTorch 2.x usually has CUDA).
#pragma once

#include <torch/types.h>

#include <string>

#include "util/memory.h"

namespace poslab {

// Whether poslab was compiled against a LibTorch with CUDA (set by CMake when the LibTorch found has CUDA).
bool cuda_built();

// The LibTorch poslab was built with and the GPU it sees, one line: "LibTorch 1.13.0 (CPU only)",
// "LibTorch 2.11.0 with CUDA 13.0; GPU: none visible", "LibTorch 2.11.0 with CUDA 13.0; GPU: NVIDIA H200 (...)".
std::string build_summary();

// The current GPU in one line, e.g. "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)"; "" without a GPU.
std::string cuda_device_summary();

// The current GPU's memory as its driver reports it (cudaMemGetInfo): what is free now (other processes' and this
// one's caching allocator's holdings already taken out) and the whole; both -1 without a GPU.
struct GpuMemory {
  int64_t free = -1;
  int64_t total = -1;
};
GpuMemory cuda_memory_info();
// The same as the room a run on the current GPU has (util/memory.h: no limit without a GPU).
MemoryRoom cuda_memory_room();

// Makes float32 matrix products and convolutions on a GPU run in TF32 (10-bit mantissa products, float32 sums) or
// in full float32 (train.tf32). A no-op in a CPU-only build.
void set_cuda_tf32(bool on);

// Why run.device = cuda cannot run here, "" when it can: no CUDA in this LibTorch build, or no GPU it can see.
std::string cuda_unavailable_reason();

// The default CUDA generator's state of the current GPU (seed and Philox offset: dropout on the GPU draws from
// it), as a 1-D uint8 tensor; an empty tensor when there is no GPU.
torch::Tensor cuda_rng_state();

// Restores a state from cuda_rng_state(). An empty tensor, or no GPU, changes nothing; a state of another size is
// a poslab::Error naming `what` (e.g. the checkpoint file).
void set_cuda_rng_state(const torch::Tensor& state, const std::string& what);

// Makes a run on a GPU repeat itself bit for bit (so a resumed run matches the uninterrupted one): LibTorch's
// deterministic algorithms, strictly (an op that has none is an error naming it; warn-only mode would let the
// attention kernels' backward run their non-deterministic algorithms) and cuBLAS's fixed workspace
// (CUBLAS_WORKSPACE_CONFIG=:4096:8, or :16:8 when set so; any other value set is a poslab::Error, since every cuBLAS
// product would fail under the strict mode). Call before the first CUDA op; it costs little at poslab's sizes.
void make_cuda_deterministic();
// Why a value of CUBLAS_WORKSPACE_CONFIG (null: unset) cannot make cuBLAS deterministic, "" when it can.
std::string cublas_workspace_problem(const char* value);

// Makes GPU `index` the current one (a distributed run's LOCAL_RANK), so that its generator, its streams and
// torch::kCUDA mean that GPU. Throws poslab::Error when there is no such GPU; a no-op in a CPU-only build.
void use_cuda_device(int index);

// Bytes of a CUDA generator state: the seed and the Philox offset, 8 each (LibTorch 1.13 and 2.x).
inline constexpr int64_t kCudaRngStateBytes = 16;

}  // namespace poslab
