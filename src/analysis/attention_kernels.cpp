#include "analysis/attention_kernels.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "util/error.h"

namespace poslab {
namespace {

// The rule of the kinds (docs/analysis.md): most of the mass on the query and its neighbour is local; most of it
// on the window's first position is a sink; half the mass spread at least 70 % as far as a uniform kernel spreads it
// is uniform; anything between decays.
constexpr double kLocalMass = 0.5;
constexpr double kSinkMass = 0.5;
constexpr double kUniformSpread = 0.7;

torch::Tensor f64(const torch::Tensor& t) { return t.detach().to(torch::kCPU, torch::kFloat64).contiguous(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

const char* kernel_kind_name(KernelKind k) {
  switch (k) {
    case KernelKind::local:
      return "local";
    case KernelKind::sink:
      return "sink";
    case KernelKind::decaying:
      return "decaying";
    case KernelKind::uniform:
      return "uniform";
  }
  return "?";
}

HeadKernel summarise_kernel(const torch::Tensor& A_in, int head, bool causal) {
  const auto A = f64(A_in);
  const int64_t P = A.size(0);
  const auto a = A.accessor<double, 2>();
  // The mass at distance d from query i: the key d before it, and for a bidirectional kernel the key d after it.
  auto ring = [&](int64_t i, int64_t d) {
    double m = i - d >= 0 ? a[i][i - d] : 0.0;
    if (!causal && d > 0 && i + d < P) m += a[i][i + d];
    return m;
  };
  auto ring_keys = [&](int64_t i, int64_t d) {  // keys at distance d (of the uniform kernel's i + 1 or P)
    return static_cast<double>((i - d >= 0 ? 1 : 0) + (!causal && d > 0 && i + d < P ? 1 : 0));
  };
  HeadKernel h;
  h.head = head;
  h.offset_profile.assign(P, 0.0);
  const int64_t first = causal ? P / 2 : P / 4, last = causal ? P : P - P / 4;
  for (int64_t d = 0; d < P; ++d) {
    double sum = 0;
    int64_t count = 0;
    for (int64_t i = causal ? d : first; i < (causal ? P : last); ++i, ++count) sum += ring(i, d);
    h.offset_profile[d] = count ? sum / static_cast<double>(count) : 0.0;
  }
  std::vector<double> o50, o90, u50;
  double m0 = 0, m1 = 0, first_key = 0;
  for (int64_t i = first; i < last; ++i) {
    m0 += a[i][i];
    m1 += ring(i, 1);
    first_key += a[i][0];
    const double keys = causal ? static_cast<double>(i + 1) : static_cast<double>(P);
    double cum = 0, ucum = 0;
    int64_t d50 = -1, d90 = -1, u = -1;
    for (int64_t d = 0; d < P; ++d) {
      cum += ring(i, d);
      ucum += ring_keys(i, d) / keys;
      if (d50 < 0 && cum >= 0.5 - 1e-12) d50 = d;
      if (d90 < 0 && cum >= 0.9 - 1e-12) d90 = d;
      if (u < 0 && ucum >= 0.5 - 1e-12) u = d;
    }
    const int64_t far = causal ? i : P - 1;  // rounding may leave the sum a hair below 1
    o50.push_back(static_cast<double>(d50 < 0 ? far : d50));
    o90.push_back(static_cast<double>(d90 < 0 ? far : d90));
    u50.push_back(static_cast<double>(u));
  }
  const double n = static_cast<double>(last - first);
  h.mass_offset0 = m0 / n;
  h.mass_offset1 = m1 / n;
  h.mass_first = first_key / n;
  h.offset50 = median(o50);
  h.offset90 = median(o90);
  h.uniform_offset50 = median(u50);
  // log m(δ) = c − δ/λ by least squares over δ = 1 … P/2 where m(δ) > 0.
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int count = 0;
  for (int64_t d = 1; d <= (causal ? P / 2 : P / 4); ++d) {
    if (h.offset_profile[d] <= 0) continue;
    const double x = static_cast<double>(d), y = std::log(h.offset_profile[d]);
    sx += x, sy += y, sxx += x * x, sxy += x * y;
    ++count;
  }
  if (count >= 2) {
    const double slope = (count * sxy - sx * sy) / (count * sxx - sx * sx);
    if (slope < 0) h.decay_length = -1.0 / slope;
  }
  if (h.mass_offset0 + h.mass_offset1 >= kLocalMass)
    h.kind = KernelKind::local;
  else if (h.mass_first >= kSinkMass)
    h.kind = KernelKind::sink;
  else if (h.offset50 >= kUniformSpread * h.uniform_offset50)
    h.kind = KernelKind::uniform;
  else
    h.kind = KernelKind::decaying;
  return h;
}

AttentionKernels attention_kernels(const AttentionWeights& w) {
  const auto P_table = f64(w.table);
  if (P_table.dim() != 2 || P_table.size(0) < 4)
    throw Error("attention kernels: the position table must be (P, C) with P >= 4, got " + c10::str(w.table.sizes()),
                "the model's weights do not match its config: the file is damaged or of another layout");
  const int64_t P = P_table.size(0), C = P_table.size(1), nh = w.n_head;
  if (nh < 1 || C % nh != 0)
    throw Error(fmt::format("attention kernels: n_embd {} is not divisible by n_head {}", C, nh),
                "the model's weights do not match its config: the file is damaged or of another layout");
  if (w.c_attn_weight.dim() != 2 || w.c_attn_weight.size(0) != 3 * C || w.c_attn_weight.size(1) != C)
    throw Error(fmt::format("attention kernels: c_attn weight is {}, expected ({}, {})",
                            c10::str(w.c_attn_weight.sizes()), 3 * C, C),
                "the model's weights do not match its config: the file is damaged or of another layout");
  auto x = P_table;
  if (w.mean_token.defined()) x = x + f64(w.mean_token).view({1, C});
  x = torch::layer_norm(x, {C}, f64(w.ln_weight), w.ln_bias.defined() ? f64(w.ln_bias) : torch::Tensor(), w.ln_eps);
  const auto W = f64(w.c_attn_weight);
  auto qk = x.matmul(W.slice(0, 0, 2 * C).transpose(0, 1));  // (P, 2C)
  if (w.c_attn_bias.defined()) qk = qk + f64(w.c_attn_bias).slice(0, 0, 2 * C).view({1, 2 * C});
  const int64_t hs = C / nh;
  const auto q = qk.slice(1, 0, C).view({P, nh, hs}).transpose(0, 1);         // (nh, P, hs)
  const auto k = qk.slice(1, C, 2 * C).view({P, nh, hs}).transpose(0, 1);     // (nh, P, hs)
  auto s = q.matmul(k.transpose(1, 2)) / std::sqrt(static_cast<double>(hs));  // (nh, P, P)
  const auto future = torch::ones({P, P}, torch::kBool).triu(1);
  if (w.causal) s = s.masked_fill(future, -std::numeric_limits<double>::infinity());
  AttentionKernels out;
  out.positions = P;
  out.n_head = nh;
  out.mean_token_added = w.mean_token.defined();
  out.causal = w.causal;
  out.kernels = torch::softmax(s, -1);
  for (int64_t h = 0; h < nh; ++h) out.heads.push_back(summarise_kernel(out.kernels[h], static_cast<int>(h), w.causal));
  return out;
}

nlohmann::json to_json(const AttentionKernels& k) {
  nlohmann::json heads = nlohmann::json::array();
  for (const HeadKernel& h : k.heads)
    heads.push_back({{"head", h.head},
                     {"kind", kernel_kind_name(h.kind)},
                     {"mass_offset0", h.mass_offset0},
                     {"mass_offset1", h.mass_offset1},
                     {"mass_first", h.mass_first},
                     {"offset50", h.offset50},
                     {"offset90", h.offset90},
                     {"uniform_offset50", h.uniform_offset50},
                     {"decay_length", h.decay_length ? nlohmann::json(*h.decay_length) : nlohmann::json(nullptr)},
                     {"offset_profile", h.offset_profile}});
  return {{"positions", k.positions}, {"mean_token_added", k.mean_token_added}, {"causal", k.causal}, {"heads", heads}};
}

std::string kernels_text(const AttentionKernels& k) {
  std::string s;
  for (const HeadKernel& h : k.heads)
    s += fmt::format(
        "  head {}: {:<8} | mass at offset 0 {:.2f}, 1 {:.2f}, on the first position {:.2f} | half the mass "
        "within {:.0f} (uniform {:.0f}), 90 % within {:.0f} | decay length {}\n",
        h.head, kernel_kind_name(h.kind), h.mass_offset0, h.mass_offset1, h.mass_first, h.offset50, h.uniform_offset50,
        h.offset90, h.decay_length ? fmt::format("{:.1f}", *h.decay_length) : std::string("-"));
  return s;
}

std::vector<std::string> kinds_of(const nlohmann::json& usage, const char* key) {
  std::vector<std::string> kinds;
  if (usage.contains(key))
    for (const auto& h : usage[key]["heads"]) kinds.push_back(h["kind"].get<std::string>());
  return kinds;
}

std::string head_kinds_words(const nlohmann::json& usage) {
  auto counted = [&](const char* key) {  // most frequent first, ties by name
    std::map<std::string, int> count;
    for (const std::string& kind : kinds_of(usage, key)) ++count[kind];
    std::vector<std::pair<int, std::string>> order;
    for (const auto& [kind, n] : count) order.emplace_back(-n, kind);
    std::sort(order.begin(), order.end());
    std::string out;
    for (const auto& [n, kind] : order) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", -n, kind);
    return out;
  };
  std::string words = counted("attention_kernels");
  if (words.empty() || !usage.contains("data_attention")) return words;
  const bool alike = kinds_of(usage, "data_attention") == kinds_of(usage, "attention_kernels");
  return words + (alike ? " (on text too)" : " | on text: " + counted("data_attention"));
}

}  // namespace poslab
