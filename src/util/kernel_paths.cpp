#include "util/kernel_paths.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "util/error.h"
#include "util/platform.h"
#include "util/sdpa_backend.h"

namespace poslab {
namespace {

KernelPaths& current() {
  static KernelPaths paths = default_kernel_paths(cpu_has_native_bf16());
  return paths;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace

const std::vector<KernelChoice>& kernel_choices() {
  static const std::vector<KernelChoice> choices = {
      {"bf16_products", {"onednn", "float"}, &KernelPaths::bf16_products},
      {"attention", {"fused", "libtorch"}, &KernelPaths::attention},
      {"pointwise", {"fused", "libtorch"}, &KernelPaths::pointwise},
      {"batch_split", {"threads", "none"}, &KernelPaths::batch_split},
      {"step", {"direct", "autograd"}, &KernelPaths::step},
      {"sdpa", {"auto", "flash", "efficient", "cudnn", "math"}, &KernelPaths::sdpa},
  };
  return choices;
}

const KernelPaths& kernel_paths() { return current(); }
void set_kernel_paths(const KernelPaths& p) {
  current() = p;
  set_sdpa_backend(p.sdpa);
}

KernelPaths default_kernel_paths(bool cpu_has_bf16) {
  KernelPaths p;
  p.bf16_products = cpu_has_bf16 ? "onednn" : "float";
  return p;
}

KernelPaths libtorch_kernel_paths() {
  KernelPaths p;
  p.bf16_products = "onednn";
  p.attention = "libtorch";
  p.pointwise = "libtorch";
  p.batch_split = "none";
  p.step = "autograd";
  return p;
}

void check_kernels_env() {
  if (const char* spec = std::getenv("POSLAB_KERNELS"); spec != nullptr && *spec != '\0')
    parse_kernel_paths(spec, KernelPaths(), "POSLAB_KERNELS");
}

bool kernel_paths_combine(const KernelPaths& p) {
  return p.step != "direct" || (p.attention == "fused" && p.pointwise == "fused");
}

bool kernel_choice_in_use(const KernelChoice& c, const std::string& dtype) {
  return dtype == "bfloat16" || std::string(c.name) != "bf16_products";
}

std::string to_string_in_use(const KernelPaths& p, const std::string& dtype) {
  std::string s;
  for (const KernelChoice& c : kernel_choices())
    if (kernel_choice_in_use(c, dtype)) s += fmt::format("{}{}={}", s.empty() ? "" : ",", c.name, p.*c.field);
  return s;
}

std::string to_string(const KernelPaths& p) { return to_string_in_use(p, "bfloat16"); }  // every choice

bool kernel_spec_measures(const std::string& spec) { return spec == "auto" || spec == "measure"; }

KernelPaths parse_kernel_paths(const std::string& spec, const KernelPaths& base, const std::string& what) {
  if (spec == "default" || kernel_spec_measures(spec)) return base;
  if (spec == "libtorch") return libtorch_kernel_paths();
  KernelPaths p = base;
  bool named_step = false;
  std::istringstream in(spec);
  std::vector<std::string> names;
  for (const KernelChoice& c : kernel_choices()) names.push_back(c.name);
  for (std::string item; std::getline(in, item, ',');) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    const auto c = std::find_if(kernel_choices().begin(), kernel_choices().end(),
                                [&](const KernelChoice& k) { return name == k.name; });
    if (eq == std::string::npos || c == kernel_choices().end())
      throw Error(
          fmt::format("{} = {}: \"{}\" is not NAME=VALUE with NAME one of {}", what, spec, item, join(names, ", ")),
          "use auto, measure, default, libtorch, or e.g. attention=libtorch,bf16_products=float");
    if (std::find(c->values.begin(), c->values.end(), value) == c->values.end())
      throw Error(fmt::format("{} = {}: {} has no candidate \"{}\"", what, spec, name, value),
                  fmt::format("{} is one of {}", name, join(c->values, ", ")));
    p.*c->field = value;
    named_step = named_step || name == "step";
  }
  if (!kernel_paths_combine(p)) {
    if (named_step)
      throw Error(fmt::format("{} = {}: step=direct runs poslab's fused kernels, not attention={} pointwise={}", what,
                              spec, p.attention, p.pointwise),
                  "use step=autograd with LibTorch's ops, or attention=fused,pointwise=fused with step=direct");
    p.step = "autograd";
  }
  return p;
}

}  // namespace poslab
