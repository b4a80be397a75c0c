#include "util/sdpa_backend.h"

#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#include <ATen/SDPBackend.h>
#include <ATen/ops/_fused_sdp_choice.h>
#endif

#include <vector>

namespace poslab {
namespace {

constexpr bool kHasCudnnFlag = TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4);

#if TORCH_VERSION_MAJOR >= 2
// The flags of the kernels poslab chooses among.
struct SdpaFlags {
  bool flash, efficient, cudnn, math;
};

SdpaFlags read_flags() {
  const auto& ctx = at::globalContext();
  bool cudnn = false;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  cudnn = ctx.userEnabledCuDNNSDP();
#endif
  return {ctx.userEnabledFlashSDP(), ctx.userEnabledMemEfficientSDP(), cudnn, ctx.userEnabledMathSDP()};
}

void write_flags(const SdpaFlags& f) {
  auto& ctx = at::globalContext();
  ctx.setSDPUseFlash(f.flash);
  ctx.setSDPUseMemEfficient(f.efficient);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  ctx.setSDPUseCuDNN(f.cudnn);
#endif
  ctx.setSDPUseMath(f.math);
}

// LibTorch's own flags, read before poslab first changes them: what "auto" restores.
const SdpaFlags& libtorch_flags() {
  static const SdpaFlags flags = read_flags();
  return flags;
}
#endif

}  // namespace

void set_sdpa_backend(const std::string& name) {
#if TORCH_VERSION_MAJOR >= 2
  const SdpaFlags start = libtorch_flags();
  if (name == "auto") return write_flags(start);
  write_flags({name == "flash", name == "efficient", name == "cudnn", name == "math"});
#endif
}

std::string sdpa_backend_unavailable(const std::string& name, bool cuda) {
  if (name == "auto") return "";
  if (TORCH_VERSION_MAJOR < 2) return "LibTorch " TORCH_VERSION " has no scaled_dot_product_attention (2.x has)";
  if (name == "cudnn" && !kHasCudnnFlag) return "cuDNN's attention needs LibTorch 2.4 or newer, not " TORCH_VERSION;
  if (!cuda && (name == "efficient" || name == "cudnn")) return "the " + name + " kernel runs on a GPU only";
  const auto& ctx = at::globalContext();
  if (name == "cudnn" && ctx.deterministicAlgorithms() && !ctx.deterministicAlgorithmsWarnOnly())
    return "cuDNN's attention has no deterministic backward, and a GPU run is deterministic (so that it resumes bit "
           "for bit)";
  return "";
}

std::string sdpa_backend_for(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
#if TORCH_VERSION_MAJOR >= 2
  TorchWarnings quiet;  // a GPU's kernels say why each declines: not for this question's asker
  try {
    switch (static_cast<at::SDPBackend>(at::_fused_sdp_choice(q, k, v, {}, 0.0, /*is_causal=*/true))) {
      case at::SDPBackend::flash_attention:
        return "flash";
      case at::SDPBackend::efficient_attention:
        return "efficient";
      case at::SDPBackend::cudnn_attention:
        return "cudnn";
      case at::SDPBackend::math:
        return "math";
      default:
        return "none";
    }
  } catch (const c10::Error&) {
    return "none";
  }
#else
  return "none";
#endif
}

#if TORCH_VERSION_MAJOR >= 2
struct TorchWarnings::Handler : c10::WarningHandler {
  void process(const c10::Warning& w) override { lines.push_back(w.msg()); }
  std::vector<std::string> lines;
  c10::WarningHandler* previous = nullptr;
};

TorchWarnings::TorchWarnings() : handler_(new Handler) {
  handler_->previous = c10::WarningUtils::get_warning_handler();
  c10::WarningUtils::set_warning_handler(handler_);
}

TorchWarnings::~TorchWarnings() {
  c10::WarningUtils::set_warning_handler(handler_->previous);
  delete handler_;
}

std::string TorchWarnings::text() const {
  std::string s;
  for (const std::string& line : handler_->lines) s += (s.empty() ? "" : "\n") + line;
  return s;
}
#else
struct TorchWarnings::Handler {};
TorchWarnings::TorchWarnings() : handler_(nullptr) {}
TorchWarnings::~TorchWarnings() = default;
std::string TorchWarnings::text() const { return ""; }
#endif

}  // namespace poslab
