// Choosing the kernel paths by measurement (tune/autotune.h): the search with known timings times every
// combination (LibTorch's own paths among them) and picks the fastest beyond the noise margin, and its run-off
// undoes a choice that the machine's drift made; a run's choice is forced by run.kernels or
// POSLAB_KERNELS, and a measured one is cached, read back, and measured over when the cache is damaged.
#include <gtest/gtest.h>
#include <spdlog/fmt/fmt.h>

#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "model/gpt.h"
#include "run/run_files.h"
#include "run/run_folder.h"
#include "test_util.h"
#include "train/step.h"
#include "tune/autotune.h"
#include "tune/kernel_choice.h"
#include "util/fs.h"

namespace poslab {
namespace {

using test::TempDir;

// A timer from a table of known milliseconds by paths (10 ms for any not listed); records what it timed.
struct FakeTimer {
  std::map<std::string, double> ms;
  std::vector<std::string> timed;
  PathTimer timer() {
    return [this](const KernelPaths& p) {
      timed.push_back(to_string(p));
      const auto it = ms.find(to_string(p));
      return it == ms.end() ? 10.0 : it->second;
    };
  }
};

// Paths stepping by autograd, where every attention and pointwise candidate can run (the search's mechanics are
// checked on these; the whole-model step has a test of its own below).
KernelPaths autograd_paths(bool cpu_has_bf16) {
  KernelPaths p = default_kernel_paths(cpu_has_bf16);
  p.step = "autograd";
  return p;
}

// The candidates as a table: a column per choice that varies, the shared ones once above, the times lined up.
TEST(Autotune, TheTimingsReadAsATableOfWhatVaries) {
  KernelTuning t;
  const KernelPaths base =
      parse_kernel_paths("bf16_products=onednn,attention=fused,pointwise=fused,batch_split=none,step=direct,sdpa=auto",
                         KernelPaths(), "test");
  KernelPaths torch_attention = base, threads = base;
  torch_attention.attention = "libtorch";
  threads.batch_split = "threads";
  t.chosen = base;
  // A finalist's difference is the run-off's median ratio (0.024 here), not its median time's (47.16 / 46.634); the
  // others' is their search time's against the chosen's search time (52.18 / 46.0), both timed in the same spell,
  // not against the chosen's run-off median, timed later.
  t.timings = {{base, 46.634, 3, 0.0, "", 46.0},
               {torch_attention, 47.16, 3, 0.024, "", 47.5},
               {threads, 52.18, 0, NAN, "", 52.18}};
  // Every row's ms is its search time: a row's difference and its ms never disagree, but for a finalist's, marked.
  EXPECT_EQ(tuning_text(t),
            "  each with bf16_products=onednn,pointwise=fused,step=direct,sdpa=auto\n"
            "  attention batch_split       ms  vs chosen\n"
            "  fused     none           46.00     chosen\n"
            "  libtorch  none           47.50       +2 %*\n"
            "  fused     threads        52.18      +13 %\n"
            "  ms: each path's time in the search, against the chosen's there; * a finalist, run off in 3 "
            "interleaved rounds, which decide: the median of its ratios to the search's choice in each round, against "
            "the chosen's (a gain of a few % keeps the earlier; the chosen's median there: 46.63 ms)\n");
  // A float32 run makes no bf16 product: its shared choices leave bf16_products out.
  EXPECT_EQ(tuning_text(t, "float32").rfind("  each with pointwise=fused,step=direct,sdpa=auto\n", 0), 0u)
      << tuning_text(t, "float32");
  t.timings[2].ms = t.timings[2].search_ms = 46.1;  // slower by less than half a percent: neither + nor -
  EXPECT_NE(tuning_text(t).find("  fused     threads        46.10        0 %\n"), std::string::npos) << tuning_text(t);
  t.timings[2].search_ms = NAN;  // a cache written before search times were kept: its median
  t.timings[2].ms = 52.18;
  EXPECT_NE(tuning_text(t).find("  fused     threads        52.18      +13 %\n"), std::string::npos) << tuning_text(t);
  t.timings.push_back({torch_attention, INFINITY, 0, NAN, "not here"});
  t.timings.back().paths.batch_split = "threads";
  EXPECT_NE(tuning_text(t).find("\n  libtorch  threads      cannot run here: not here\n"), std::string::npos)
      << tuning_text(t);
  EXPECT_EQ(tuning_text(KernelTuning{}), "");
}

TEST(Autotune, TheSearchTimesEveryCombinationAndKeepsTheFastestBeyondTheMargin) {
  const KernelPaths start = autograd_paths(true);  // onednn, fused, fused, threads, autograd
  const std::string S = ",batch_split=threads,step=autograd,sdpa=auto", N = ",batch_split=none,step=autograd,sdpa=auto";
  FakeTimer t;
  t.ms["bf16_products=float,attention=fused,pointwise=fused" + S] = 9.9;  // 1 % faster: noise, not taken
  t.ms["bf16_products=onednn,attention=libtorch,pointwise=fused" + S] = 9.0;
  t.ms["bf16_products=onednn,attention=fused,pointwise=fused" + N] = 11.0;
  // the fastest, though neither of its changes from start is faster alone: a search one choice at a time misses it
  t.ms["bf16_products=float,attention=fused,pointwise=libtorch" + N] = 8.5;
  KernelTuning r = search_kernel_paths(start, t.timer(), {"step", "sdpa"}, 0.03, /*runoff_rounds=*/0);
  EXPECT_EQ(to_string(r.chosen), "bf16_products=float,attention=fused,pointwise=libtorch" + N);
  ASSERT_EQ(t.timed.size(), 32u);  // 2 x 2 x 2 x 2, in two sweeps: start first, then the same backwards
  EXPECT_EQ(t.timed[0], to_string(start));
  EXPECT_EQ(t.timed[31], to_string(start));
  EXPECT_EQ(std::vector<std::string>(t.timed.rbegin(), t.timed.rbegin() + 16),
            std::vector<std::string>(t.timed.begin(), t.timed.begin() + 16));
  EXPECT_EQ(std::set<std::string>(t.timed.begin(), t.timed.end()).size(), 16u);
  EXPECT_NE(std::find(t.timed.begin(), t.timed.end(), to_string(libtorch_kernel_paths())), t.timed.end());
  EXPECT_EQ(r.timings.size(), 16u);
  EXPECT_NE(tuning_text(r).find("    chosen\n"), std::string::npos);

  // all within the margin of start: start stays
  FakeTimer near;
  near.ms["bf16_products=onednn,attention=libtorch,pointwise=libtorch" + N] = 9.8;
  r = search_kernel_paths(start, near.timer(), {"step", "sdpa"}, 0.03, 0);
  EXPECT_EQ(r.chosen, start);

  // fixed choices are not varied and keep the start's value, in LibTorch's paths too; all equal: the defaults stay
  FakeTimer f32;
  r = search_kernel_paths(autograd_paths(false), f32.timer(), {"bf16_products", "batch_split", "step", "sdpa"}, 0.03,
                          0);
  for (const auto& s : f32.timed) {
    EXPECT_NE(s.find("bf16_products=float"), std::string::npos) << s;
    EXPECT_NE(s.find("batch_split=threads"), std::string::npos) << s;
  }
  EXPECT_EQ(f32.timed.size(), 8u);  // attention x pointwise, twice, the defaults first
  EXPECT_EQ(f32.timed[0], to_string(autograd_paths(false)));
  EXPECT_EQ(r.chosen, autograd_paths(false));
}

// The whole-model step runs poslab's fused kernels: the search never times it with LibTorch's attention or
// pointwise ops, and takes it only when it is measured faster, as any other path.
TEST(Autotune, TheDirectStepIsTimedOnlyWithTheKernelsItRuns) {
  const KernelPaths start = default_kernel_paths(false);  // step=direct
  ASSERT_EQ(start.step, "direct");
  FakeTimer t;
  t.ms[to_string(start)] = 12.0;  // slower than autograd's fused paths (10 ms): not taken
  KernelTuning r = search_kernel_paths(start, t.timer(), {"bf16_products", "batch_split", "sdpa"}, 0.03, 0);
  // attention x pointwise under autograd (4), and the one direct combination, twice
  EXPECT_EQ(t.timed.size(), 10u);
  for (const auto& s : t.timed) {
    if (s.find("step=direct") != std::string::npos) {
      EXPECT_NE(s.find("attention=fused,pointwise=fused"), std::string::npos) << s;
    }
  }
  EXPECT_EQ(r.chosen.step, "autograd");
  t.ms[to_string(start)] = 8.0;
  r = search_kernel_paths(start, t.timer(), {"bf16_products", "batch_split", "sdpa"}, 0.03, 0);
  EXPECT_EQ(r.chosen, start);

  // bf16, where the direct step needs the products through oneDNN: the run's `runs` keeps the others out
  FakeTimer b;
  b.ms["bf16_products=onednn,attention=fused,pointwise=fused,batch_split=threads,step=direct,sdpa=auto"] = 7.0;
  const auto runs = [](const KernelPaths& p) { return p.step != "direct" || p.bf16_products == "onednn"; };
  r = search_kernel_paths(autograd_paths(false), b.timer(), {"batch_split", "sdpa"}, 0.03, 0, runs);
  EXPECT_EQ(b.timed.size(), 18u);  // (2 x 4 under autograd + the one direct combination), twice
  for (const auto& s : b.timed)
    EXPECT_EQ(s.find("bf16_products=float,attention=fused,pointwise=fused,"
                     "batch_split=threads,step=direct"),
              std::string::npos)
        << s;
  EXPECT_EQ(to_string(r.chosen),
            "bf16_products=onednn,attention=fused,pointwise=fused,batch_split=threads,step=direct,sdpa=auto");
}

// A machine whose speed drifts: a path's k-th timing is its true time times drift[path][k] (1 when not listed).
struct DriftingTimer {
  std::map<std::string, double> ms;  // true times
  std::map<std::string, std::vector<double>> drift;
  std::vector<std::string> timed;
  PathTimer timer() {
    return [this](const KernelPaths& p) {
      const std::string s = to_string(p);
      const size_t visit = static_cast<size_t>(std::count(timed.begin(), timed.end(), s));
      timed.push_back(s);
      const auto d = drift.find(s);
      return ms.at(s) * (d != drift.end() && visit < d->second.size() ? d->second[visit] : 1.0);
    };
  }
};

// Every bf16 combination of the kernel paths at `ms` milliseconds.
std::map<std::string, double> all_paths_at(double ms) {
  std::map<std::string, double> m;
  for (const char* b : {"onednn", "float"})
    for (const char* a : {"fused", "libtorch"})
      for (const char* p : {"fused", "libtorch"})
        for (const char* s : {"threads", "none"})
          m[fmt::format("bf16_products={},attention={},pointwise={},batch_split={},step=autograd,sdpa=auto", b, a, p,
                        s)] = ms;
  return m;
}

// A finalist's difference is what decided, the median of its ratios to the search's choice, over the winner's: a
// median of its ratios to the winner itself (not transitive over noisy rounds) could read a loser as faster.
TEST(Autotune, AFinalistsDifferenceIsWhatDecided) {
  const KernelPaths start = autograd_paths(true);  // onednn, fused, fused, threads, autograd
  const std::string start_s = to_string(start), torch_s = to_string(libtorch_kernel_paths());
  const std::string w_s =
      "bf16_products=onednn,attention=fused,pointwise=fused,batch_split=none,step=autograd,sdpa=auto";
  const std::string x_s =
      "bf16_products=onednn,attention=libtorch,pointwise=fused,batch_split=threads,step=autograd,sdpa=auto";
  DriftingTimer t;
  t.ms = all_paths_at(13);  // not finalists
  t.ms[start_s] = t.ms[w_s] = t.ms[x_s] = 10;
  t.ms[torch_s] = 12;
  t.drift[w_s] = {1, 1, 0.8, 0.8, 1.2};    // the rounds: 8, 8, 12 against start's 10: median ratio 0.8, the winner
  t.drift[x_s] = {1, 1, 0.79, 1.0, 1.19};  // 7.9, 10, 11.9: median ratio 1.0; against w's round by round 0.99
  KernelTuning r = search_kernel_paths(start, t.timer(), {"step", "sdpa"});
  ASSERT_EQ(to_string(r.chosen), w_s);
  std::map<std::string, double> vs;
  for (const PathTiming& p : r.timings) vs[to_string(p.paths)] = p.vs_chosen;
  EXPECT_NEAR(vs[x_s], 1.0 / 0.8 - 1, 1e-12);
  EXPECT_NEAR(vs[start_s], 1.0 / 0.8 - 1, 1e-12);
  EXPECT_NEAR(vs[torch_s], 1.2 / 0.8 - 1, 1e-12);
}

TEST(Autotune, TheRunOffUndoesAChoiceThatTheMachinesDriftMadeAndKeepsClearLosersOut) {
  const KernelPaths start = autograd_paths(true);  // onednn, fused, fused, threads, autograd
  const std::string start_s = to_string(start), torch_s = to_string(libtorch_kernel_paths());
  const std::string none_s =
      "bf16_products=onednn,attention=fused,pointwise=fused,batch_split=none,step=autograd,sdpa=auto";
  DriftingTimer t;
  t.ms = all_paths_at(13);  // slower than start by more than 25 %: not finalists
  t.ms[start_s] = 10;
  t.ms[torch_s] = 12;
  t.ms[none_s] = 8.5;            // truly the fastest,
  t.drift[none_s] = {1.4, 1.5};  // but both sweeps time it in slow spells: 11.9 ms at best
  for (const std::string& f : {start_s, torch_s, none_s})
    t.drift[f].resize(4, 1.0), t.drift[f][3] = 1.3;  // the run-off's round 2 runs slow as a whole
  KernelTuning r = search_kernel_paths(start, t.timer(), {"step", "sdpa"});
  EXPECT_EQ(to_string(r.chosen), none_s);
  ASSERT_EQ(t.timed.size(), 32u + 3u * 3u);  // the search, then 3 rounds of 3 finalists
  // finalists: the search's choice (start), LibTorch's paths (always), batch_split=none (11.9 ms: within 25 %)
  EXPECT_EQ(std::vector<std::string>(t.timed.begin() + 32, t.timed.begin() + 35),
            (std::vector<std::string>{start_s, torch_s, none_s}));
  EXPECT_EQ(std::vector<std::string>(t.timed.begin() + 35, t.timed.begin() + 38),
            (std::vector<std::string>{torch_s, none_s, start_s}));  // each round starts one further along
  for (const PathTiming& p : r.timings) {
    if (p.paths == r.chosen) {
      EXPECT_EQ(p.rounds, 3);
      EXPECT_DOUBLE_EQ(p.ms, 8.5);  // the median over rounds: 8.5, 8.5 * 1.3, 8.5
      EXPECT_DOUBLE_EQ(p.vs_chosen, 0.0);
    } else if (to_string(p.paths) == start_s) {
      EXPECT_NEAR(p.vs_chosen, 10 / 8.5 - 1, 1e-12);  // round by round against the chosen: 10 / 8.5 each time
    } else if (to_string(p.paths) == torch_s) {
      EXPECT_NEAR(p.vs_chosen, 12 / 8.5 - 1, 1e-12);
    } else if (to_string(p.paths) != start_s && to_string(p.paths) != torch_s) {
      EXPECT_EQ(p.rounds, 0) << to_string(p.paths);
    }
  }
  EXPECT_NE(tuning_text(r).find("* a finalist, run off in 3 interleaved rounds, which decide"), std::string::npos);

  // a path that the search took in a fast spell loses the run-off to the default
  DriftingTimer lucky;
  lucky.ms = all_paths_at(13);
  lucky.ms[start_s] = 10;
  lucky.ms[torch_s] = 12;
  const std::string lucky_s =
      "bf16_products=onednn,attention=libtorch,pointwise=fused,batch_split=threads,step=autograd,sdpa=auto";
  lucky.ms[lucky_s] = 10.5;      // truly 5 % slower than start,
  lucky.drift[lucky_s] = {0.8};  // but timed in a fast spell once: 8.4 ms, the lower of its two
  r = search_kernel_paths(start, lucky.timer(), {"step", "sdpa"});
  // the second sweep times only those within 1.5 times the first sweep's best (8.4): lucky, start, LibTorch's;
  // the run-off's finalists are the same three
  EXPECT_EQ(lucky.timed.size(), 16u + 3u + 3u * 3u);
  EXPECT_EQ(r.chosen, start);
}

// A candidate that cannot run here (a GPU's attention kernel that does not take the dtype) is kept with its reason,
// timed once, never chosen, and cached as such; the run's own start must run.
TEST(Autotune, APathThatCannotRunIsNamedWithWhyAndNeverChosen) {
  KernelPaths start = autograd_paths(true);
  std::vector<std::string> fixed;  // the sdpa choice alone, as on a GPU
  for (const KernelChoice& c : kernel_choices())
    if (std::string(c.name) != "sdpa") fixed.push_back(c.name);
  const auto with_sdpa = [&](const char* v) {
    KernelPaths p = start;
    p.sdpa = v;
    return to_string(p);
  };
  FakeTimer t;
  t.ms[with_sdpa("efficient")] = 8.0;
  t.ms[with_sdpa("math")] = 30.0;
  const PathTimer timer = [&](const KernelPaths& p) {
    if (p.sdpa == "flash") {
      t.timed.push_back(to_string(p));
      throw KernelPathUnavailable("No available kernel.; Flash attention supports dtypes fp16 and bf16");
    }
    return t.timer()(p);
  };
  KernelTuning r = search_kernel_paths(start, timer, fixed, 0.03, 0);
  EXPECT_EQ(r.chosen.sdpa, "efficient");
  EXPECT_EQ(std::count(t.timed.begin(), t.timed.end(), with_sdpa("flash")), 1);  // not timed again
  ASSERT_EQ(r.timings.size(), 5u);                                               // auto, flash, efficient, cudnn, math
  const auto flash = std::find_if(r.timings.begin(), r.timings.end(), [](auto& p) { return p.paths.sdpa == "flash"; });
  EXPECT_TRUE(std::isinf(flash->ms));
  EXPECT_EQ(flash->unavailable, "No available kernel.; Flash attention supports dtypes fp16 and bf16");
  const std::string text = tuning_text(r);
  const size_t line = text.find("\n  flash ") + 1;  // sdpa, the one choice that varies, names the rows
  ASSERT_NE(line, 0u) << text;
  const std::string flash_line = text.substr(line, text.find('\n', line) - line);
  EXPECT_NE(flash_line.find(" cannot run here: No available kernel.; Flash attention supports dtypes fp16 and bf16"),
            std::string::npos)
      << text;

  // cached as it was measured: the reason kept, no time (JSON has no infinity)
  TempDir dir;
  r.key = "a key";
  write_kernel_cache(dir / "kernel_paths.json", r);
  EXPECT_NE(read_file(dir / "kernel_paths.json").find("\"unavailable\""), std::string::npos);
  const std::optional<KernelTuning> back = read_kernel_cache(dir / "kernel_paths.json", "a key");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->chosen, r.chosen);
  ASSERT_EQ(back->timings.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(back->timings[i].unavailable, r.timings[i].unavailable);
    EXPECT_EQ(back->timings[i].ms, r.timings[i].ms);
    if (std::isfinite(r.timings[i].search_ms))  // the search's time kept too (none for a path that cannot run)
      EXPECT_EQ(back->timings[i].search_ms, r.timings[i].search_ms);
    else
      EXPECT_TRUE(std::isnan(back->timings[i].search_ms));
  }

  // a finalist that ran in the sweeps and fails in the run-off is out, its reason kept; so is the choice itself
  for (const char* fails : {"efficient", "auto"}) {
    SCOPED_TRACE(std::string("failing in the run-off: sdpa=") + fails);
    FakeTimer late;
    late.ms[with_sdpa("efficient")] = 8.0;
    late.ms[with_sdpa("cudnn")] = 9.0;
    std::map<std::string, int> visits;
    const PathTimer fails_late = [&](const KernelPaths& p) {
      if (p.sdpa == fails && ++visits[to_string(p)] > 2) throw KernelPathUnavailable("out of memory");
      return late.timer()(p);
    };
    r = search_kernel_paths(start, fails_late, fixed, 0.03, 3);
    EXPECT_EQ(r.chosen.sdpa, std::string(fails) == "efficient" ? "cudnn" : "efficient");
    for (const PathTiming& p : r.timings) {
      EXPECT_EQ(p.unavailable.empty(), p.paths.sdpa != fails) << to_string(p.paths);
      EXPECT_EQ(std::isinf(p.ms), p.paths.sdpa == fails) << to_string(p.paths);
    }
  }

  // A run-off's tuning cached under another key beside the first: both kept, the finalists' rounds and their time
  // against the chosen's included.
  const std::string first_chosen = to_string(back->chosen);
  r.key = "another key";
  ASSERT_TRUE(std::any_of(r.timings.begin(), r.timings.end(),
                          [](const PathTiming& p) { return p.rounds > 0 && std::isfinite(p.vs_chosen); }));
  write_kernel_cache(dir / "kernel_paths.json", r);
  const std::optional<KernelTuning> first = read_kernel_cache(dir / "kernel_paths.json", "a key");
  ASSERT_TRUE(first.has_value()) << "writing one key keeps the file's others";
  EXPECT_EQ(to_string(first->chosen), first_chosen);
  const std::optional<KernelTuning> second = read_kernel_cache(dir / "kernel_paths.json", "another key");
  ASSERT_TRUE(second.has_value());
  ASSERT_EQ(second->timings.size(), r.timings.size());
  for (size_t i = 0; i < r.timings.size(); ++i) {
    EXPECT_EQ(second->timings[i].rounds, r.timings[i].rounds) << i;
    if (std::isnan(r.timings[i].vs_chosen))
      EXPECT_TRUE(std::isnan(second->timings[i].vs_chosen)) << i;
    else
      EXPECT_NEAR(second->timings[i].vs_chosen, r.timings[i].vs_chosen, 1e-12) << i;
  }

  // the run's own paths failing is the run's error
  const PathTimer start_fails = [](const KernelPaths&) -> double { throw KernelPathUnavailable("out of memory"); };
  EXPECT_THROW(search_kernel_paths(start, start_fails, fixed, 0.03, 0), KernelPathUnavailable);
}

Config autotune_config(const TempDir& dir) {
  Config c;
  c.model.n_layer = 1;
  c.model.n_head = 2;
  c.model.n_embd = 32;
  c.model.block_size = 16;
  c.train.batch_size = 4;
  c.train.dtype = "float32";
  c.data.cache_dir = dir / "cache";
  return c;
}

// The timer on the model: paths whose pass fails in LibTorch (here a GPU's attention kernel alone, on the CPU) throw
// KernelPathUnavailable with LibTorch's reason on one line, and leave the model as they found it.
TEST(Autotune, TheTimerSaysWhyAPathCannotRunAndLeavesTheModelAsItWas) {
  TempDir dir;
  const Config cfg = autotune_config(dir);
  GPT model(cfg.model, 64);
  BatchSplit split(model, 1);
  const PathTimer timer = model_pass_timer(model, split, cfg, torch::Device(torch::kCPU));
  KernelPaths p = autograd_paths(false);
  p.attention = "libtorch";
  EXPECT_GT(timer(p), 0.0);
  p.sdpa = "efficient";
  if (TORCH_VERSION_MAJOR < 2) {  // LibTorch 1.x's attention is bmm + softmax + bmm: no kernel to refuse it
    EXPECT_GT(timer(p), 0.0);
    return;
  }
  try {
    timer(p);
    ADD_FAILURE() << "sdpa=efficient ran on the CPU";
  } catch (const KernelPathUnavailable& e) {
    const std::string why = e.what();
    EXPECT_NE(why.find("No viable backend for scaled_dot_product_attention"), std::string::npos) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }
  for (const auto& w : model->parameters()) EXPECT_FALSE(w.grad().defined() && w.grad().abs().sum().item<double>() > 0);
  EXPECT_EQ(kernel_paths().sdpa, "auto");  // the paths and LibTorch's flags put back
  p.sdpa = "math";
  EXPECT_GT(timer(p), 0.0);
}

// A resumed run goes on with the paths its folder records; a record from before a choice existed reads as the one
// path there was then (no step: autograd's; no sdpa: LibTorch's pick), whatever the paths are now.
TEST(Autotune, AResumedRunTakesItsRecordAndWhatTheRecordLeavesOutIsWhatThereWas) {
  TempDir dir;
  test::ScopedEnv no_forced_paths("POSLAB_KERNELS", nullptr);  // the tests' main sets it
  const KernelPaths before = kernel_paths();
  const Config cfg = autotune_config(dir);
  GPT model(cfg.model, 64);
  auto split = std::make_unique<BatchSplit>(model, 1);
  Comm one;
  make_dirs(dir / "run");
  write_kernel_record(RunFolder(dir / "run"),
                      "bf16_products=float,attention=libtorch,pointwise=fused,batch_split=threads", "measured");
  KernelPaths now = before;
  now.sdpa = "math";
  now.step = "direct";
  set_kernel_paths(now);
  choose_run_kernel_paths(dir / "run", /*resuming=*/true, cfg, model, split, torch::Device(torch::kCPU), 1, one);
  EXPECT_EQ(to_string(kernel_paths()),
            "bf16_products=float,attention=libtorch,pointwise=fused,batch_split=threads,step=autograd,sdpa=auto");
  // a record of a kernel this device cannot run (a GPU run's, resumed on the CPU): LibTorch picks, a warning says so
  write_kernel_record(RunFolder(dir / "run"), "attention=libtorch,step=autograd,sdpa=efficient", "measured");
  choose_run_kernel_paths(dir / "run", /*resuming=*/true, cfg, model, split, torch::Device(torch::kCPU), 1, one);
  EXPECT_EQ(kernel_paths().attention, "libtorch");
  EXPECT_EQ(kernel_paths().sdpa, "auto");
  write_kernel_record(RunFolder(dir / "run"), "attention=libtorch,step=autograd,sdpa=math", "measured");
  choose_run_kernel_paths(dir / "run", /*resuming=*/true, cfg, model, split, torch::Device(torch::kCPU), 1, one);
  EXPECT_EQ(kernel_paths().sdpa, TORCH_VERSION_MAJOR >= 2 ? "math" : "auto");  // one it can run: kept
  set_kernel_paths(before);
}

TEST(Autotune, ARunsChoiceIsForcedOrMeasuredOnceAndCached) {
  TempDir dir;
  // these cases set run.kernels: POSLAB_KERNELS (which the tests' main sets) is put aside for them
  test::ScopedEnv no_forced_paths("POSLAB_KERNELS", nullptr);
  const KernelPaths before = kernel_paths();
  Config cfg = autotune_config(dir);
  GPT model(cfg.model, 64);
  BatchSplit split(model, 1);
  const torch::Device cpu(torch::kCPU);

  cfg.run.kernels = "attention=libtorch";
  KernelTuning t = choose_kernel_paths(model, split, cfg, cpu, 1);
  EXPECT_EQ(t.how, "run.kernels = attention=libtorch");
  EXPECT_TRUE(t.timings.empty());
  EXPECT_EQ(kernel_paths().attention, "libtorch");
  EXPECT_FALSE(std::filesystem::exists(kernel_cache_path(cfg)));

  cfg.run.kernels = "auto";
  t = choose_kernel_paths(model, split, cfg, cpu, 1);
  EXPECT_EQ(t.how.rfind("measured in ", 0), 0u) << t.how;
  EXPECT_GE(t.timings.size(), 3u);  // float32, unsplit: start, attention, pointwise, (LibTorch's)
  for (const PathTiming& p : t.timings) EXPECT_GT(p.ms, 0.0);
  ASSERT_TRUE(std::filesystem::exists(kernel_cache_path(cfg)));
  const KernelTuning again = choose_kernel_paths(model, split, cfg, cpu, 1);
  EXPECT_EQ(again.how.rfind("cached on ", 0), 0u) << again.how;
  EXPECT_EQ(again.chosen, t.chosen);
  EXPECT_EQ(again.timings.size(), t.timings.size());
  EXPECT_EQ(again.key, t.key);
  EXPECT_NE(t.key.find("layers 1 heads 2 embd 32 block 16 vocab 64 batch 4 threads 1"), std::string::npos) << t.key;

  cfg.run.kernels = "measure";  // measures even with a cache entry
  EXPECT_EQ(choose_kernel_paths(model, split, cfg, cpu, 1).how.rfind("measured in ", 0), 0u);

  write_file_atomic(kernel_cache_path(cfg), "{\"" + t.key + "\": {\"paths\": \"attention=warp\"}}");
  cfg.run.kernels = "auto";  // a damaged entry: measured over (a warning names the file), and rewritten
  EXPECT_EQ(choose_kernel_paths(model, split, cfg, cpu, 1).how.rfind("measured in ", 0), 0u);
  EXPECT_EQ(choose_kernel_paths(model, split, cfg, cpu, 1).how.rfind("cached on ", 0), 0u);

  // asked for where it cannot run (bf16 with its products in float): the run steps by autograd, and says so
  cfg.run.kernels = "bf16_products=float,step=direct";
  cfg.train.dtype = "bfloat16";
  EXPECT_EQ(choose_kernel_paths(model, split, cfg, cpu, 1).chosen.step, "autograd");
  cfg.run.kernels = "bf16_products=onednn,step=direct";  // bf16 through oneDNN: the direct step runs
  EXPECT_EQ(choose_kernel_paths(model, split, cfg, cpu, 1).chosen.step, "direct");
  cfg.run.kernels = "step=direct";
  cfg.train.dtype = "float32";
  EXPECT_EQ(choose_kernel_paths(model, split, cfg, cpu, 1).chosen.step, "direct");
  // a GPU's attention kernel asked for on the CPU: LibTorch picks (a warning says so); the CPU's own kernel is taken
  cfg.run.kernels = "attention=libtorch,sdpa=efficient";
  EXPECT_EQ(choose_kernel_paths(model, split, cfg, cpu, 1).chosen.sdpa, "auto");
  cfg.run.kernels = "attention=libtorch,sdpa=math";
  t = choose_kernel_paths(model, split, cfg, cpu, 1);
  EXPECT_EQ(t.chosen.sdpa, TORCH_VERSION_MAJOR >= 2 ? "math" : "auto");
  EXPECT_EQ(t.sdpa_kernel, TORCH_VERSION_MAJOR >= 2 ? "math" : "");  // the kernel the model's attention runs
  cfg.run.kernels = "step=direct";

  setenv("POSLAB_KERNELS", "pointwise=libtorch", 1);  // the environment wins over run.kernels
  t = choose_kernel_paths(model, split, cfg, cpu, 1);
  EXPECT_EQ(t.how, "POSLAB_KERNELS = pointwise=libtorch");
  EXPECT_EQ(kernel_paths().pointwise, "libtorch");
  EXPECT_EQ(kernel_paths().step, "autograd");  // LibTorch's pointwise ops: the direct step cannot run them
  set_kernel_paths(before);
}

}  // namespace
}  // namespace poslab
