#include "util/platform.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <ATen/Version.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "util/cuda.h"
#include "util/error.h"

namespace poslab {

namespace {

// /proc/cpuinfo's first "flags" line into buf as " flag flag ... " (a space at both ends; "" when unreadable). Plain
// system calls and no allocation: it also runs inside OpenBLAS's initialiser, before the C++ library's (getenv below).
void read_cpu_flags(char* buf, size_t cap) {
  buf[0] = '\0';
  char text[32768];
  const int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  size_t n = 0;
  for (ssize_t got = 1; got > 0 && n + 1 < sizeof text; n += static_cast<size_t>(got > 0 ? got : 0))
    got = read(fd, text + n, sizeof text - 1 - n);
  close(fd);
  text[n] = '\0';
  const char* line = std::strncmp(text, "flags", 5) == 0 ? text : std::strstr(text, "\nflags");
  if (line == nullptr) return;
  const char* colon = std::strchr(line + 1, ':');
  const char* end = colon == nullptr ? nullptr : std::strchr(colon, '\n');
  if (end == nullptr) return;  // cut short
  const size_t len = std::min(static_cast<size_t>(end - colon - 1), cap - 3);
  buf[0] = ' ';
  std::memcpy(buf + 1, colon + 1, len);
  buf[len + 1] = ' ';
  buf[len + 2] = '\0';
}

bool has_flag(const char* flags, const char* f) {  // flags as read_cpu_flags gives them
  const size_t len = std::strlen(f);
  for (const char* at = std::strstr(flags, f); at != nullptr; at = std::strstr(at + 1, f))
    if (at > flags && at[-1] == ' ' && at[len] == ' ') return true;
  return false;
}

bool has_flag(const std::string& flags, const char* f) { return has_flag(flags.c_str(), f); }

}  // namespace

const char* environment_value(const char* name) {
  const size_t n = std::strlen(name);
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return nullptr;
}

namespace {

// The OPENBLAS_CORETYPE for a CPU with these flags, nullptr to leave OpenBLAS's own choice.
const char* coretype_for(const char* flags) {
  auto has = [&](const char* f) { return has_flag(flags, f); };
  if (has("avx512f") && has("avx512bw") && has("avx512vl") && has("avx512dq")) return "SkylakeX";
  if (has("avx2") && has("fma")) return "Haswell";
  return nullptr;
}

std::string cpu_flags() {
  char flags[8192];
  read_cpu_flags(flags, sizeof flags);
  return flags;
}

bool blas_env_left_alone() {
  const char* no = environment_value("POSLAB_NO_REEXEC");
  return no != nullptr && std::strcmp(no, "1") == 0;
}

// Whether getenv was asked for each OpenBLAS variable (OpenBLAS's initialiser asks before main).
std::atomic<bool> asked_core{false}, asked_threads{false};

// What getenv gives for an OpenBLAS variable the environment leaves unset: the core type for this CPU, and one
// thread (OpenBLAS's own pool spins between calls and fights LibTorch's pool for the same cores: measured here, one
// BLAS thread made fp32 training of the default model 1.29x faster and bf16 1.15x; docs/results.md, "Speed").
// nullptr for any other name, and for both when POSLAB_NO_REEXEC=1. No static guard: a getenv inside the reading of
// /proc/cpuinfo (an interposed open) must not find an initialisation under way.
const char* blas_default(const char* name) {
  if (std::strncmp(name, "OPENBLAS_", 9) != 0 || blas_env_left_alone()) return nullptr;
  if (std::strcmp(name, "OPENBLAS_NUM_THREADS") == 0) {
    asked_threads = true;
    return "1";
  }
  if (std::strcmp(name, "OPENBLAS_CORETYPE") != 0) return nullptr;
  asked_core = true;
  static std::atomic<const char*> core{nullptr};
  static std::atomic<bool> known{false};
  if (!known) {  // computed once, or twice by two threads at once: the same answer
    char flags[8192];
    read_cpu_flags(flags, sizeof flags);
    core = coretype_for(flags);
    known = true;
  }
  return core;
}

}  // namespace

std::string preferred_openblas_coretype() {
  const char* core = coretype_for(cpu_flags().c_str());
  return core == nullptr ? "" : core;
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
  if (blas_env_left_alone()) return;
  // OpenBLAS asked getenv for the variables the environment leaves unset, and took poslab's values. A BLAS that
  // asked for neither read them some other way: then they go into the environment and the program starts again, once.
  const std::string core = preferred_openblas_coretype();
  const bool set_core = environment_value("OPENBLAS_CORETYPE") == nullptr && !asked_core && !core.empty();
  const bool set_threads = environment_value("OPENBLAS_NUM_THREADS") == nullptr && !asked_threads;
  if (!set_core && !set_threads) return;
  if (dlsym(RTLD_DEFAULT, "openblas_get_corename") == nullptr) return;  // not OpenBLAS: MKL inside PyTorch's LibTorch
  if (set_core) setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  if (set_threads) setenv("OPENBLAS_NUM_THREADS", "1", 1);
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
    if (const char* env = std::getenv("OPENBLAS_CORETYPE"))
      out << ", OPENBLAS_CORETYPE=" << env << (environment_value("OPENBLAS_CORETYPE") ? "" : " (poslab's)");
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

int apply_threads(int threads, int processes_here, bool say) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int n = threads > 0 ? threads : std::max(1, cores / std::max(1, processes_here));
  if (say && processes_here > cores)  // fewer threads cannot help: the processes are too many
    spdlog::warn(
        "{} processes on this machine's {} cores: they take turns on them, and every step waits for the slowest; "
        "run {} processes or fewer here (--nproc)",
        processes_here, cores, cores);
  else if (say && threads > 0 && threads * std::max(1, processes_here) > cores)  // 16 on 2 cores: a step ~90× slower
    spdlog::warn(
        "run.threads {}{} is more than this machine's {} cores: the threads take turns on them, and every "
        "step waits for the slowest; run.threads auto takes {}",
        threads, processes_here > 1 ? fmt::format(" in each of {} processes", processes_here) : "", cores,
        std::max(1, cores / std::max(1, processes_here)));
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

// getenv for the process, in place of the C library's: an executable's definition comes first in the dynamic loader's
// lookup (for every library but those opened with RTLD_DEEPBIND, as the sentencepiece shim is), so OpenBLAS's
// initialiser, which runs before main and reads its variables once, calls this one. It answers as the C library does,
// but for the OpenBLAS variables the environment leaves unset, which get poslab's values (blas_default). Setting them
// in main and re-executing the program to have OpenBLAS read them cost a second start of LibTorch, ~0.8 s a command on
// a 2-core AMD EPYC with Debian's LibTorch; ensure_fast_blas checks that OpenBLAS asked for them. Child processes
// inherit the environment as it is.
extern "C" char* getenv(const char* name) {
  if (const char* v = poslab::environment_value(name)) return const_cast<char*>(v);
  return const_cast<char*>(poslab::blas_default(name));
}
