#include "util/platform.h"

#include <dlfcn.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <ATen/Version.h>
#include <torch/torch.h>

#include "util/cuda.h"
#include "util/error.h"

namespace poslab {

namespace {

// The CPU's feature flags from /proc/cpuinfo, space-separated with a space at both ends ("" when unknown).
std::string cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) return " " + line.substr(line.find(':') + 1) + " ";
  return "";
}

bool has_flag(const std::string& flags, const char* f) {
  return flags.find(std::string(" ") + f + " ") != std::string::npos;
}

}  // namespace

std::string preferred_openblas_coretype() {
  const std::string flags = cpu_flags();
  auto has = [&](const char* f) { return has_flag(flags, f); };
  if (has("avx512f") && has("avx512bw") && has("avx512vl") && has("avx512dq")) return "SkylakeX";
  if (has("avx2") && has("fma")) return "Haswell";
  return "";
}

std::string cpu_description() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, name = "unknown CPU";
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      name = line.substr(line.find(':') + 1);
      name.erase(0, name.find_first_not_of(' '));
      break;
    }
  const std::string flags = cpu_flags();
  const char* cls = has_flag(flags, "amx_bf16")      ? "AMX"
                    : has_flag(flags, "avx512_bf16") ? "AVX512-BF16"
                    : has_flag(flags, "avx512f")     ? "AVX-512"
                    : has_flag(flags, "avx2")        ? "AVX2"
                                                     : "no AVX2";
  return name + " (" + cls + ")";
}

bool cpu_has_native_bf16() {
  const std::string flags = cpu_flags();
  return has_flag(flags, "avx512_bf16") || has_flag(flags, "amx_bf16");
}

std::string resolve_dtype(const std::string& dtype, const std::string& device) {
  if (dtype != "auto") return dtype;
  return device == "cuda" || cpu_has_native_bf16() ? "bfloat16" : "float32";
}

void ensure_fast_blas(int argc, char** argv) {
  (void)argc;
  if (const char* no = std::getenv("POSLAB_NO_REEXEC"); no != nullptr && std::string(no) == "1") return;
  bool changed = false;
  const std::string core = preferred_openblas_coretype();
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr && !core.empty()) {
    setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
    changed = true;
  }
  // OpenBLAS's own thread pool spins between calls and fights LibTorch's pool for the same cores: measured
  // here, one BLAS thread made fp32 training of the default model 1.29x faster and bf16 1.15x (scripts in
  // docs/results.md, "Speed"). Only at start-up does this variable keep the pool from being created.
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) {
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    changed = true;
  }
  if (!changed) return;
  setenv("POSLAB_NO_REEXEC", "1", 1);  // never loop
  execv("/proc/self/exe", argv);
  // execv failed: carry on with OpenBLAS's own choices.
}

void keep_freed_memory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest: a fixed value also stops its dynamic adjustment
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
}

std::string blas_summary() {
  std::string lib;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (path.find("libblas") != std::string::npos || path.find("openblas") != std::string::npos ||
        path.find("libmkl") != std::string::npos || path.find("blis") != std::string::npos) {
      lib = path;
      break;
    }
  }
  std::ostringstream out;
  using CoreFn = char* (*)();
  auto corename = reinterpret_cast<CoreFn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  auto config = reinterpret_cast<CoreFn>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
  if (corename != nullptr) {
    out << "OpenBLAS core " << corename() << " (" << (config ? config() : "") << ")";
    if (const char* env = std::getenv("OPENBLAS_CORETYPE")) out << ", OPENBLAS_CORETYPE=" << env;
  } else if (lib.find("blas/libblas") != std::string::npos) {
    out << "reference BLAS (slow: run scripts/setup.sh to install OpenBLAS)";
  } else if (lib.empty()) {  // none loaded on its own: PyTorch's LibTorch 2.x links its BLAS (MKL on x86) inside
    const std::string config = at::show_config();
    const auto at = config.find("BLAS_INFO=");
    const std::string name =
        at == std::string::npos ? "" : config.substr(at + 10, config.find_first_of(", \n", at + 10) - (at + 10));
    out << (name == "mkl" ? "MKL" : name.empty() ? "BLAS" : name) << " (inside LibTorch)";
  } else {
    out << "BLAS";
  }
  if (!lib.empty()) out << " from " << lib;
  return out.str();
}

void set_blas_threads(int n) {
  using SetFn = void (*)(int);
  if (auto set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(n);
}

int blas_threads() {
  using GetFn = int (*)();
  auto get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get ? get() : 0;
}

int apply_threads(int threads, int processes_here) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int n = threads > 0 ? threads : std::max(1, cores / std::max(1, processes_here));
  torch::set_num_threads(n);
  return n;
}

std::string resolve_device(const std::string& device, const std::string& key) {
  if (device == "cuda" && !torch::cuda::is_available())
    throw Error(key + " = cuda: " + cuda_unavailable_reason(), "use " + key + " auto or cpu");
  if (device == "auto") return torch::cuda::is_available() ? "cuda" : "cpu";
  return device;
}

}  // namespace poslab
