#include "train/autotune.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>

#include "data/dataset.h"
#include "ops/autocast.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/platform.h"

namespace poslab {
namespace {

namespace fs = std::filesystem;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? NAN : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The CPU generator's state, restored on leaving the scope (a timed pass with dropout draws from it).
class KeepCpuRng {
 public:
  KeepCpuRng() {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    state_ = gen.get_state();
  }
  ~KeepCpuRng() {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(state_);
  }
  KeepCpuRng(const KeepCpuRng&) = delete;
  KeepCpuRng& operator=(const KeepCpuRng&) = delete;

 private:
  torch::Tensor state_;
};

nlohmann::json timings_json(const std::vector<PathTiming>& timings) {
  nlohmann::json j = nlohmann::json::array();
  for (const PathTiming& t : timings) {
    nlohmann::json row = {{"paths", to_string(t.paths)}, {"ms", t.ms}};
    if (t.rounds > 0) row["rounds"] = t.rounds;
    j.push_back(row);
  }
  return j;
}

}  // namespace

std::optional<KernelTuning> read_kernel_cache(const std::string& path, const std::string& key) {
  if (!fs::is_regular_file(path)) return std::nullopt;
  try {
    const nlohmann::json j = nlohmann::json::parse(read_file(path));
    if (!j.is_object() || !j.contains(key)) return std::nullopt;
    const auto& e = j.at(key);
    KernelTuning t;
    t.key = key;
    t.chosen = parse_kernel_paths(e.at("paths").get<std::string>(), kernel_paths(), path);
    for (const auto& row : e.at("timings"))
      t.timings.push_back({parse_kernel_paths(row.at("paths").get<std::string>(), kernel_paths(), path),
                           row.at("ms").get<double>(), row.value("rounds", 0)});
    t.how = "cached (" + e.value("date", std::string("?")) + ", " + path + ")";
    return t;
  } catch (const std::exception& e) {
    spdlog::warn("kernel paths: {} is damaged ({}); measuring again, and the file will be rewritten", path, e.what());
    return std::nullopt;
  }
}

namespace {

void write_cached(const std::string& path, const KernelTuning& t) {
  nlohmann::json j = nlohmann::json::object();
  if (fs::is_regular_file(path)) {
    try {
      j = nlohmann::json::parse(read_file(path));
      if (!j.is_object()) j = nlohmann::json::object();
    } catch (const std::exception&) {
      j = nlohmann::json::object();  // damaged: read_kernel_cache warned; the rest of it is lost, as a cache may be
    }
  }
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  j[t.key] = {{"paths", to_string(t.chosen)}, {"timings", timings_json(t.timings)}, {"date", date}};
  try {
    make_dirs(fs::path(path).parent_path().string());
    write_file_atomic(path, j.dump(2) + "\n");
  } catch (const Error& e) {
    spdlog::warn("kernel paths: not cached ({}); the next run measures again", e.what());
  }
}

void run_off(KernelTuning& t, const PathTimer& time, const KernelPaths& torch_paths, double margin, int rounds) {
  // The finalists: the choice, LibTorch's paths, and the fastest others within kNear of the choice's time (a
  // clear loser is not timed again), kMaxFinalists in all.
  constexpr size_t kMaxFinalists = 4;
  constexpr double kNear = 1.25;
  std::vector<KernelPaths> finalists{t.chosen};
  if (torch_paths != t.chosen) finalists.push_back(torch_paths);
  double chosen_ms = INFINITY;
  for (const PathTiming& p : t.timings)
    if (p.paths == t.chosen) chosen_ms = std::min(chosen_ms, p.ms);
  std::vector<PathTiming> by_ms = t.timings;
  std::stable_sort(by_ms.begin(), by_ms.end(), [](const PathTiming& a, const PathTiming& b) { return a.ms < b.ms; });
  for (const PathTiming& p : by_ms)
    if (finalists.size() < kMaxFinalists && p.ms <= kNear * chosen_ms &&
        std::find(finalists.begin(), finalists.end(), p.paths) == finalists.end())
      finalists.push_back(p.paths);
  if (finalists.size() < 2) return;
  // Each round times every finalist once, starting one further along each round; within a round the machine's
  // drift touches all of them alike, so each is judged by its time relative to the choice's in the same round.
  const size_t n = finalists.size();
  std::vector<std::vector<double>> ms(n), ratio(n);
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> round(n);
    for (size_t i = 0; i < n; ++i) {
      const size_t f = (i + static_cast<size_t>(r)) % n;
      round[f] = time(finalists[f]);
    }
    for (size_t f = 0; f < n; ++f) {
      ms[f].push_back(round[f]);
      ratio[f].push_back(round[f] / round[0]);
    }
  }
  size_t winner = 0;
  double winner_ratio = 1.0;
  for (size_t f = 1; f < n; ++f) {
    const double r = median(ratio[f]);
    if (r < winner_ratio * (1.0 - margin)) {
      winner = f;
      winner_ratio = r;
    }
  }
  t.chosen = finalists[winner];
  for (size_t f = 0; f < n; ++f) {
    auto it =
        std::find_if(t.timings.begin(), t.timings.end(), [&](const PathTiming& p) { return p.paths == finalists[f]; });
    it->ms = median(ms[f]);
    it->rounds = rounds;
  }
}

}  // namespace

KernelTuning search_kernel_paths(const KernelPaths& start, const PathTimer& time, const std::vector<std::string>& fixed,
                                 double margin, int runoff_rounds) {
  auto is_fixed = [&](const char* name) { return std::find(fixed.begin(), fixed.end(), name) != fixed.end(); };
  // Every combination of the free choices' values, start first.
  std::vector<KernelPaths> all{start};
  for (const KernelChoice& c : kernel_choices()) {
    if (is_fixed(c.name)) continue;
    std::vector<KernelPaths> next;
    for (const KernelPaths& p : all)
      for (const std::string& v : c.values) {
        KernelPaths q = p;
        q.*c.field = v;
        if (std::find(next.begin(), next.end(), q) == next.end()) next.push_back(q);
      }
    all = std::move(next);
  }
  all.erase(std::find(all.begin(), all.end(), start));
  all.insert(all.begin(), start);
  // Two sweeps, the second in reverse order, each combination's time the lower of its two: a candidate timed in
  // a slow spell in one sweep is timed at the other end of the other. A clear loser (kLoser times the first
  // sweep's best) is not timed again.
  constexpr double kLoser = 1.5;
  std::vector<double> ms(all.size(), INFINITY);
  for (size_t i = 0; i < all.size(); ++i) ms[i] = time(all[i]);
  const double first_best = *std::min_element(ms.begin(), ms.end());
  for (size_t i = all.size(); i-- > 0;)
    if (ms[i] <= kLoser * first_best) ms[i] = std::min(ms[i], time(all[i]));
  KernelTuning out;
  out.chosen = start;
  out.how = "measured";
  size_t fastest = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    out.timings.push_back({all[i], ms[i]});
    if (ms[i] < ms[fastest]) fastest = i;
  }
  if (ms[fastest] < ms[0] * (1.0 - margin)) out.chosen = all[fastest];  // all[0] is start
  KernelPaths torch_paths = libtorch_kernel_paths();
  for (const KernelChoice& c : kernel_choices())
    if (is_fixed(c.name)) torch_paths.*c.field = start.*c.field;
  if (runoff_rounds > 0) run_off(out, time, torch_paths, margin, runoff_rounds);
  return out;
}

int batch_split_of(int ways) { return kernel_paths().batch_split == "none" ? 1 : ways; }

PathTimer model_pass_timer(GPT& model, BatchSplit& split, const Config& cfg, const torch::Device& device, int warmup,
                           int reps) {
  const int64_t B = cfg.train.batch_size, T = cfg.model.block_size, V = model->wte->weight.size(0);
  // a fixed batch of token ids spread over the vocabulary, no generator drawn from
  const torch::Tensor ids = (torch::arange(B * (T + 1), torch::kInt64) * 7919) % V;
  const torch::Tensor x = ids.slice(0, 0, B * T).view({B, T}), y = ids.slice(0, 1, B * T + 1).view({B, T});
  const bool bf16 = cfg.train.dtype == "bfloat16";
  auto whole = std::make_shared<std::unique_ptr<BatchSplit>>();  // batch_split=none, made when first timed
  return [&model, &split, whole, x, y, bf16, device, warmup, reps](const KernelPaths& paths) {
    KernelPathsGuard guard(paths);
    KeepCpuRng keep_rng;
    if (paths.batch_split == "none" && split.ways() > 1 && !*whole) *whole = std::make_unique<BatchSplit>(model, 1);
    BatchSplit& s = paths.batch_split == "none" && split.ways() > 1 ? **whole : split;
    IntraOpThreads one(s.ways() > 1 ? 1 : 0);  // as train_step_on keeps it for the whole step
    std::vector<double> ms;
    for (int r = 0; r < warmup + reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      s.forward_backward(x, y, 1.0, bf16, device);
      s.reduce_grads();
      const double dt = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      model->zero_grad();
      if (r >= warmup) ms.push_back(dt);
    }
    return median(ms);
  };
}

// This program's build: the size and modification time of the running executable. Timings measured by another
// build of poslab (whose kernels may run at another speed) are not reused.
std::string this_build() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "build unknown";
  const auto size = fs::file_size(exe, ec);
  const auto time = fs::last_write_time(exe, ec);
  if (ec) return "build unknown";
  return fmt::format("build {:x}-{:x}", size, static_cast<uint64_t>(time.time_since_epoch().count()));
}

std::string kernel_tuning_key(const Config& cfg, int64_t vocab, int threads, const std::string& device,
                              const std::string& dtype) {
  const ModelConfig& m = cfg.model;
  static const std::string build = this_build();
  return fmt::format("{} | LibTorch {} | poslab {} | {} {} | layers {} heads {} embd {} block {} vocab {} batch {} threads {}{}{}",
                     cpu_description(), TORCH_VERSION, build, device, dtype, m.n_layer, m.n_head, m.n_embd, m.block_size,
                     vocab, cfg.train.batch_size, threads, m.bias ? "" : " no-bias",
                     m.dropout > 0 ? fmt::format(" dropout {}", m.dropout) : "");
}

std::string kernel_cache_path(const Config& cfg) { return (fs::path(cache_dir(cfg)) / "kernel_paths.json").string(); }

KernelTuning choose_kernel_paths(GPT& model, BatchSplit& split, const Config& cfg, const torch::Device& device,
                                 int threads) {
  const KernelPaths defaults = default_kernel_paths(cpu_has_native_bf16());
  const char* env = std::getenv("POSLAB_KERNELS");
  const bool from_env = env != nullptr && *env != '\0';
  const std::string spec = from_env ? env : cfg.run.kernels;
  const std::string what = from_env ? "POSLAB_KERNELS" : "run.kernels";
  KernelTuning t;
  t.chosen = parse_kernel_paths(spec, defaults, what);  // checks the spec whatever it asks for
  t.key = kernel_tuning_key(cfg, model->wte->weight.size(0), threads, device.is_cuda() ? "cuda" : "cpu",
                            cfg.train.dtype);
  if (!kernel_spec_measures(spec)) {
    t.how = fmt::format("{} = {}", what, spec);
  } else if (device.is_cuda()) {
    t.how = "not measured on a GPU (the choices are the CPU's)";
  } else {
    const std::string cache = kernel_cache_path(cfg);
    std::optional<KernelTuning> cached = spec == "auto" ? read_kernel_cache(cache, t.key) : std::nullopt;
    if (cached) {
      t = std::move(*cached);
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<std::string> fixed;
      if (cfg.train.dtype != "bfloat16") fixed.push_back("bf16_products");
      if (split.ways() == 1 || cfg.run.batch_split != 0) fixed.push_back("batch_split");
      t = search_kernel_paths(defaults, model_pass_timer(model, split, cfg, device), fixed);
      t.key = kernel_tuning_key(cfg, model->wte->weight.size(0), threads, "cpu", cfg.train.dtype);
      t.how = fmt::format("measured in {:.1f} s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      write_cached(cache, t);
    }
  }
  set_kernel_paths(t.chosen);
  spdlog::info("kernel paths: {} ({})", to_string(t.chosen), t.how);
  if (!t.timings.empty()) spdlog::info("kernel paths, ms per forward + backward:\n{}", tuning_text(t));
  return t;
}

nlohmann::json to_json(const KernelTuning& t) {
  return {{"chosen", to_string(t.chosen)}, {"how", t.how}, {"key", t.key}, {"timings", timings_json(t.timings)}};
}

std::string tuning_text(const KernelTuning& t) {
  double chosen_ms = NAN;
  for (const PathTiming& p : t.timings)
    if (p.paths == t.chosen) chosen_ms = p.ms;
  std::string s;
  for (const PathTiming& p : t.timings)
    s += fmt::format("  {:<80} {:8.2f} ms{}{}{}\n", to_string(p.paths), p.ms,
                     p.rounds > 0 ? fmt::format(" (median of {} interleaved rounds)", p.rounds) : "",
                     std::isfinite(chosen_ms) && p.paths != t.chosen
                         ? fmt::format("  ({:+.0f} % against the chosen)", 100.0 * (p.ms / chosen_ms - 1.0))
                         : "",
                     p.paths == t.chosen ? "  <- chosen" : "");
  return s;
}

}  // namespace poslab
