#include "tune/autotune_search.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace poslab {
namespace {

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
  // drift touches all of them alike, so each is judged by its time relative to the choice's in the same round. A
  // finalist that fails in a round (it ran in the sweeps: the GPU's memory, say) is out, its reason kept.
  const size_t n = finalists.size();
  std::vector<std::vector<double>> ms(n), ratio(n);
  std::vector<std::string> failed(n);
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> round(n, INFINITY);
    for (size_t i = 0; i < n; ++i) {
      const size_t f = (i + static_cast<size_t>(r)) % n;
      if (!failed[f].empty()) continue;
      try {
        round[f] = time(finalists[f]);
      } catch (const KernelPathUnavailable& e) {
        failed[f] = e.what();
      }
    }
    for (size_t f = 0; f < n; ++f) {
      if (!failed[f].empty()) continue;
      ms[f].push_back(round[f]);
      if (failed[0].empty()) ratio[f].push_back(round[f] / round[0]);
    }
  }
  size_t winner = 0;
  if (failed[0].empty()) {
    double winner_ratio = 1.0;
    for (size_t f = 1; f < n; ++f) {
      const double r = median_ms(ratio[f]);
      if (failed[f].empty() && r < winner_ratio * (1.0 - margin)) {
        winner = f;
        winner_ratio = r;
      }
    }
  } else {  // the choice itself failed: the fastest of the others that ran every round
    for (size_t f = 1; f < n; ++f)
      if (failed[f].empty() && (winner == 0 || median_ms(ms[f]) < median_ms(ms[winner]))) winner = f;
    if (winner == 0) throw KernelPathUnavailable(failed[0]);  // every finalist failed: nothing runs here
  }
  t.chosen = finalists[winner];
  for (size_t f = 0; f < n; ++f) {
    // Against the winner round by round (the winner ran every round; so did each finalist that did not fail).
    std::vector<double> against;
    for (size_t r = 0; failed[f].empty() && r < ms[f].size() && r < ms[winner].size(); ++r)
      against.push_back(ms[f][r] / ms[winner][r]);
    auto it =
        std::find_if(t.timings.begin(), t.timings.end(), [&](const PathTiming& p) { return p.paths == finalists[f]; });
    if (!failed[f].empty()) {
      it->ms = INFINITY;
      it->unavailable = failed[f];
      it->rounds = 0;
    } else {
      it->ms = median_ms(ms[f]);
      it->rounds = rounds;
      // What decided, set against the winner's: the median of the rounds' ratios to the search's choice (a median
      // of ratios to the winner itself could read a loser as faster than it)
      it->vs_chosen =
          failed[0].empty() ? median_ms(ratio[f]) / median_ms(ratio[winner]) - 1.0 : median_ms(against) - 1.0;
      it->unavailable.clear();  // LibTorch's paths, a finalist always, may have failed in the sweeps and run now
    }
  }
}

}  // namespace

double median_ms(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  return n == 0 ? NAN : n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
}

KernelTuning search_kernel_paths(const KernelPaths& start, const PathTimer& time, const std::vector<std::string>& fixed,
                                 double margin, int runoff_rounds,
                                 const std::function<bool(const KernelPaths&)>& runs) {
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
  all.erase(std::remove_if(all.begin(), all.end(),
                           [&](const KernelPaths& p) { return !kernel_paths_combine(p) || (runs && !runs(p)); }),
            all.end());
  all.erase(std::find(all.begin(), all.end(), start));
  all.insert(all.begin(), start);
  // Two sweeps, the second in reverse order, each combination's time the lower of its two: a candidate timed in
  // a slow spell in one sweep is timed at the other end of the other. A clear loser (kLoser times the first
  // sweep's best) is not timed again.
  constexpr double kLoser = 1.5;
  std::vector<double> ms(all.size(), INFINITY);
  std::vector<std::string> unavailable(all.size());
  const auto time_or_why = [&](size_t i) {
    try {
      return time(all[i]);
    } catch (const KernelPathUnavailable& e) {
      if (i == 0) throw;  // start: the run's own paths
      unavailable[i] = e.what();
      return double(INFINITY);
    }
  };
  for (size_t i = 0; i < all.size(); ++i) ms[i] = time_or_why(i);
  const double first_best = *std::min_element(ms.begin(), ms.end());
  for (size_t i = all.size(); i-- > 0;)
    if (ms[i] <= kLoser * first_best) ms[i] = std::min(ms[i], time_or_why(i));
  for (size_t i = 0; i < all.size(); ++i)
    if (!unavailable[i].empty()) ms[i] = INFINITY;
  KernelTuning out;
  out.chosen = start;
  out.how = "measured";
  size_t fastest = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    out.timings.push_back({all[i], ms[i], 0, NAN, unavailable[i], ms[i]});
    if (ms[i] < ms[fastest]) fastest = i;
  }
  if (ms[fastest] < ms[0] * (1.0 - margin)) out.chosen = all[fastest];  // all[0] is start
  KernelPaths torch_paths = libtorch_kernel_paths();
  for (const KernelChoice& c : kernel_choices())
    if (is_fixed(c.name)) torch_paths.*c.field = start.*c.field;
  if (runoff_rounds > 0) run_off(out, time, torch_paths, margin, runoff_rounds);
  return out;
}

std::string tuning_text(const KernelTuning& t, const std::string& dtype) {
  if (t.timings.empty()) return "";
  const PathTiming* chosen = nullptr;
  for (const PathTiming& p : t.timings)
    if (p.paths == t.chosen) chosen = &p;
  // A column per choice that differs among the candidates; the ones they share are said once, above them.
  std::vector<const KernelChoice*> varied;
  std::vector<size_t> widths;
  std::string shared;
  const KernelPaths& first = t.timings.front().paths;
  for (const KernelChoice& c : kernel_choices()) {
    size_t w = std::string(c.name).size();
    bool varies = false;
    for (const PathTiming& p : t.timings) {
      varies = varies || p.paths.*c.field != first.*c.field;
      w = std::max(w, (p.paths.*c.field).size());
    }
    if (varies) {
      varied.push_back(&c);
      widths.push_back(w);
    } else if (kernel_choice_in_use(c, dtype)) {
      shared += (shared.empty() ? "" : ",") + std::string(c.name) + "=" + first.*c.field;
    }
  }
  std::string s;
  if (!shared.empty()) s += "  each with " + shared + "\n";
  std::string header = " ";
  for (size_t k = 0; k < varied.size(); ++k) header += fmt::format(" {:<{}}", varied[k]->name, widths[k]);
  s += header + fmt::format(" {:>8}  {:>9}\n", "ms", "vs chosen");
  // Every row's ms is its time in the search, where the others are set against the chosen's (timed in the same
  // spell); a finalist's difference is the run-off's, round by round against the chosen, which decides.
  const auto search_ms = [](const PathTiming& p) { return std::isfinite(p.search_ms) ? p.search_ms : p.ms; };
  int rounds = 0;
  for (const PathTiming& p : t.timings) {
    std::string row = " ";
    for (size_t k = 0; k < varied.size(); ++k) row += fmt::format(" {:<{}}", p.paths.*varied[k]->field, widths[k]);
    if (!p.unavailable.empty()) {
      s += row + "  cannot run here: " + p.unavailable + "\n";
      continue;
    }
    rounds = std::max(rounds, p.rounds);
    double vs = p.vs_chosen;
    if (!std::isfinite(vs) && chosen != nullptr) vs = search_ms(p) / search_ms(*chosen) - 1.0;
    std::string against = p.paths == t.chosen ? "chosen"
                          : std::isfinite(vs) ? fmt::format("{:+.0f} %", 100.0 * vs)
                                              : "";
    if (against == "-0 %" || against == "+0 %") against = "0 %";  // within half a percent, either way
    s +=
        row + fmt::format(" {:8.2f}  {:>9}{}\n", search_ms(p), against, p.rounds > 0 && p.paths != t.chosen ? "*" : "");
  }
  if (rounds > 0 && chosen != nullptr)
    s += fmt::format(
        "  ms: each path's time in the search, against the chosen's there; * a finalist, run off in {} interleaved "
        "rounds, which decide: the median of its ratios to the search's choice in each round, against the chosen's "
        "(a gain of a few % keeps the earlier; the chosen's median there: {:.2f} ms)\n",
        rounds, chosen->ms);
  return s;
}

}  // namespace poslab
