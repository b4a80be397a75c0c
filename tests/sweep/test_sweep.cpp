// poslab sweep and compare: a tiny sweep (2 variants x 2 seeds) cut short twice and resumed, then its comparison
// table against means and standard deviations computed here from the runs' own files; every sweep-file error.
#include <gtest/gtest.h>
#include <spdlog/fmt/fmt.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "analysis/agreement.h"
#include "analysis/analysis.h"
#include "analysis/metric_list.h"
#include "analysis/trajectory.h"
#include "config/config.h"
#include "formats/npy.h"
#include "report/compare.h"
#include "report/report.h"
#include "run/run_files.h"
#include "run/run_folder.h"
#include "run/tensorboard_files.h"
#include "source_paths.h"
#include "sweep/sweep.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/run_setup.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/lock.h"

namespace poslab {
namespace {

using test::read_jsonl;
using test::TempDir;
namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::write_text(dir_ / "corpus.txt", test::generated_corpus(2000));
    test::write_text(
        dir_ / "configs/base.yaml",
        "run: {out_dir: " + (dir_ / "runs") +
            ", threads: 1, report: false, device: cpu}\n"
            "data: {corpus: " +
            (dir_ / "corpus.txt") + ", cache_dir: " + (dir_ / "cache") +
            ", tokenizer: {type: char}}\n"
            "model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 16}\n"
            "train: {batch_size: 8, max_steps: 6, eval_every: 3, eval_batches: 2, checkpoint_every: 3, log_every: 3}\n"
            "snapshot: {every: 3}\n");
  }
  // A sweep file in configs/sweeps/ with `body` after its base line; returns its path.
  std::string sweep_file(const std::string& body, const std::string& name = "tiny.yaml") {
    const std::string path = dir_ / ("configs/sweeps/" + name);
    test::write_text(path, "base: ../base.yaml\n" + body);
    return path;
  }
  // The poslab::Error load_sweep throws for `body` ("" if none).
  // The error and hint of a sweep file that fails to load ("" when it loads).
  std::pair<std::string, std::string> sweep_failure(const std::string& body) {
    try {
      load_sweep(sweep_file(body, "bad.yaml"));
    } catch (const Error& e) {
      return {e.what(), e.hint()};
    }
    return {};
  }
  std::string sweep_error(const std::string& body) { return sweep_failure(body).first; }
  std::string sweep_hint(const std::string& body) { return sweep_failure(body).second; }
  TempDir dir_;
};

constexpr const char* kTinySweep = "seeds: [1, 2]\ngrid:\n  model.position: [learned, none]\n";

TEST_F(SweepTest, GridAndNamedVariantsCrossAndNameTheirFolders) {
  const Sweep s = load_sweep(sweep_file(
      "seeds: [7]\nset: {train.max_steps: 4}\ngrid:\n  model.block_size: [8, 16]\n  model.wpe_init_std: [0.002]\n"
      "variants:\n  - {name: decay, set: {train.decay_position_table: true}}\n"
      "  - {name: no-decay, set: {train.decay_position_table: false}}\n"));
  ASSERT_EQ(s.variants.size(), 4u);
  EXPECT_EQ(s.variants[0].name, "decay_block_size-8_wpe_init_std-0.002");
  EXPECT_EQ(s.variants[3].name, "no-decay_block_size-16_wpe_init_std-0.002");
  EXPECT_EQ(s.name, "tiny");
  const auto runs = sweep_runs(s, {"train.max_steps=2"});
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[1].run_dir, dir_ / "runs/tiny/decay_block_size-16_wpe_init_std-0.002/seed-7");
  // The sweep's set, the variant's, --set, then the run's own seed and folder, each named by where it was given.
  const std::string file = dir_ / "configs/sweeps/tiny.yaml";
  EXPECT_EQ(runs[1].overrides.front().assignment, "train.max_steps=4");
  EXPECT_EQ(runs[1].overrides.front().source, file + ": set:");
  EXPECT_EQ(runs[1].overrides[1].assignment, "train.decay_position_table=true");
  EXPECT_EQ(runs[1].overrides[1].source, file + ": variant decay_block_size-16_wpe_init_std-0.002");
  EXPECT_EQ(runs[1].overrides[4].assignment, "train.max_steps=2");
  EXPECT_EQ(runs[1].overrides[4].source, "--set");
  EXPECT_EQ(runs[1].overrides.back().assignment, "run.name=seed-7");
  EXPECT_EQ(runs[1].overrides.back().source, "the sweep " + file);
}

// A value the sweep file gives is named by it in the errors of its runs, those of training too: no "--set" the user
// never typed.
TEST_F(SweepTest, ARunsErrorsNameTheSweepFileForItsValues) {
  const std::string file =
      sweep_file("seeds: [1]\nvariants:\n  - {name: elsewhere, set: {data.corpus: " + (dir_ / "nothing-here") + "}}\n");
  const Sweep s = load_sweep(file);
  const auto runs = sweep_runs(s, {});
  const Config cfg = load_config(s.base, runs.front().overrides);
  const std::string msg = test::error_of([&] { check_corpus_paths(cfg); });
  EXPECT_EQ(msg.rfind(file + ": variant elsewhere: data.corpus: ", 0), 0u) << msg;
  EXPECT_EQ(msg.find("--set"), std::string::npos) << msg;
}

// A sweep whose runs failed says which, counting in words; the runs that failed did not stop the others.
TEST_F(SweepTest, ASweepsFailuresAreCountedInWords) {
  const std::string variant = "variants:\n  - {name: elsewhere, set: {data.corpus: " + (dir_ / "nothing-here") + "}}\n";
  std::string msg = test::error_of([&] { run_sweep(sweep_file("seeds: [1]\n" + variant, "one.yaml"), {}); });
  EXPECT_NE(msg.find("sweep one: the run " + (dir_ / "runs/one/elsewhere/seed-1") + " failed |"), std::string::npos)
      << msg;
  msg = test::error_of([&] { run_sweep(sweep_file("seeds: [1, 2]\n" + variant, "two.yaml"), {}); });
  EXPECT_NE(msg.find("sweep two: 2 of 2 runs failed, the first " + (dir_ / "runs/two/elsewhere/seed-1") + " |"),
            std::string::npos)
      << msg;
}

TEST_F(SweepTest, ASweepCutShortResumesWithoutRetrainingFinishedRunsAndComparesByVariant) {
  const std::string file = sweep_file(kTinySweep);
  SweepOptions first;
  first.max_runs = 2;  // seed 1 of both variants
  SweepSummary s = run_sweep(file, first);
  EXPECT_EQ(s.runs, 4);
  EXPECT_EQ(s.trained, 2);
  EXPECT_EQ(s.finished, 2);
  SweepOptions cut;
  cut.stop_at = 3;  // the next run stops half way, as if interrupted
  s = run_sweep(file, cut);
  EXPECT_EQ(s.done_before, 2);
  EXPECT_EQ(s.trained, 1);
  EXPECT_EQ(s.finished, 2);
  // Again with --stop-at: the run stopped there is left there, and the next one is trained to that step.
  const std::string sweep = dir_ / "runs/tiny";
  const std::string held = slurp(sweep + "/position-learned/seed-2/checkpoints/latest.pt");
  s = run_sweep(file, cut);
  EXPECT_EQ(s.done_before, 2);
  EXPECT_EQ(s.resumed, 0);
  EXPECT_EQ(s.trained, 1);
  EXPECT_EQ(slurp(sweep + "/position-learned/seed-2/checkpoints/latest.pt"), held);

  std::map<std::string, std::string> before;  // the finished runs' checkpoints and metrics, byte for byte
  for (const std::string run : {"position-learned/seed-1", "position-none/seed-1"})
    for (const std::string f : {"checkpoints/latest.pt", "metrics.jsonl"})
      before[run + "/" + f] = slurp(sweep + "/" + run + "/" + f);
  s = run_sweep(file, {});
  EXPECT_EQ(s.done_before, 2);
  EXPECT_EQ(s.resumed, 2);
  EXPECT_EQ(s.trained, 0);
  EXPECT_EQ(s.finished, 4);
  for (const auto& [f, bytes] : before) EXPECT_EQ(slurp(sweep + "/" + f), bytes) << f << " was written again";
  EXPECT_TRUE(fs::is_regular_file(sweep + "/sweep.json"));

  // The comparison: per variant, mean and sample sd over the 2 seeds of numbers read here from each run's files.
  const Comparison c = compare_runs({sweep});
  ASSERT_EQ(c.rows.size(), 2u);
  try {  // a run given twice (here: in its sweep and on its own) would count as two seeds
    compare_runs({sweep, sweep + "/position-learned/seed-1/"});
    FAIL() << "a run was compared twice";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(sweep + "/position-learned/seed-1 is given twice (as " + sweep + " and as " +
                                         sweep + "/position-learned/seed-1/)"),
              std::string::npos)
        << e.what();
  }
  for (const auto& row : c.rows) {
    ASSERT_EQ(row.runs.size(), 2u) << row.variant;
    std::vector<double> val, k90;
    for (int seed : {1, 2}) {
      const std::string run = sweep + "/" + row.variant + "/seed-" + std::to_string(seed);
      val.push_back(read_jsonl(run + "/metrics.jsonl").back()["val_loss"].get<double>());
      if (row.variant == "position-learned") {
        const NpyArray a = read_npy(run + "/snapshots/wpe_step000006.npy");
        const auto W = torch::tensor(a.data, torch::kFloat64).view({a.shape[0], a.shape[1]});
        k90.push_back(analyze_table(W, run).k90);
      }
    }
    const double mean = (val[0] + val[1]) / 2, sd = std::abs(val[0] - val[1]) / std::sqrt(2.0);
    ASSERT_EQ(row.keys[0], "val_loss");
    EXPECT_NEAR(row.stats[0].mean, mean, 1e-12) << row.variant;
    EXPECT_NEAR(row.stats[0].sd, sd, 1e-12) << row.variant;
    EXPECT_EQ(row.stats[0].n, 2);
    const size_t k = std::find(row.keys.begin(), row.keys.end(), "k90") - row.keys.begin();
    ASSERT_LT(k, row.keys.size());
    if (row.variant == "position-learned") {
      EXPECT_EQ(row.judged, 2);
      EXPECT_NEAR(row.stats[k].mean, (k90[0] + k90[1]) / 2, 1e-12);
    } else {  // no table: losses only
      EXPECT_EQ(row.judged, 0);
      EXPECT_EQ(row.stats[k].n, 0);
    }
  }
  // Seed agreement: one pair of seeds of the variant with a table, equal to comparing its two last snapshots; the
  // variant without a table has none.
  ASSERT_EQ(c.agreement.size(), 1u);
  EXPECT_EQ(c.agreement[0].a, "position-learned");
  EXPECT_EQ(c.agreement[0].b, "position-learned");
  EXPECT_EQ(c.agreement[0].pairs, 1);
  {
    auto table = [&](int seed) {
      const NpyArray a =
          read_npy(sweep + "/position-learned/seed-" + std::to_string(seed) + "/snapshots/wpe_step000006.npy");
      return torch::tensor(a.data, torch::kFloat64).view({a.shape[0], a.shape[1]});
    };
    const Agreement g = table_agreement(table(1), table(2), "seed 1", "seed 2");
    EXPECT_DOUBLE_EQ(c.agreement[0].cka.mean, g.cka);
    EXPECT_DOUBLE_EQ(c.agreement[0].procrustes_residual.mean, g.procrustes_residual);
    EXPECT_EQ(comparison_json(c)["agreement"][0]["cka"]["mean"].get<double>(), g.cka);
  }
  // Each headline metric's half-change step: pooled over the runs' own trajectories.
  for (const auto& row : c.rows) {
    ASSERT_EQ(row.half_change.size(), headline_metrics().size()) << row.variant;
    if (row.variant != "position-learned") continue;
    std::vector<std::vector<HalfChange>> per_run;
    for (int seed : {1, 2})
      per_run.push_back(half_change_steps(analyze_run(sweep + "/" + row.variant + "/seed-" + std::to_string(seed))));
    for (size_t k = 0; k < row.half_change.size(); ++k) {
      std::vector<double> steps;
      for (const auto& hc : per_run) steps.push_back(hc[k].step ? static_cast<double>(*hc[k].step) : NAN);
      const Stat expect = pooled(steps);
      EXPECT_EQ(row.half_change[k].n, expect.n) << row.half_keys[k];
      if (expect.n > 0) {
        EXPECT_DOUBLE_EQ(row.half_change[k].mean, expect.mean) << row.half_keys[k];
      }
    }
  }
  const std::string csv = comparison_csv(c);
  EXPECT_NE(csv.find(",signal_share_half_step_mean,signal_share_half_step_sd"), std::string::npos) << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3) << csv;
  EXPECT_EQ(csv.rfind("variant,runs,val_loss_mean,val_loss_sd,train_loss_mean", 0), 0u) << csv;

  // Runs of one variant name and one seed are no seeds of one variant (a copy of the sweep beside it, two folders
  // named alike): each such variant is named by where it was given, and said.
  fs::copy(sweep, dir_ / "copy", fs::copy_options::recursive);
  {
    test::CapturedLog log;
    const Comparison two = compare_runs({sweep, dir_ / "copy"});
    ASSERT_EQ(two.rows.size(), 4u);
    EXPECT_EQ(two.rows[0].variant, sweep + "/position-learned");
    EXPECT_EQ(two.rows[2].variant, dir_ / "copy/position-learned");
    for (const auto& row : two.rows) EXPECT_EQ(row.runs.size(), 2u) << row.variant;
    EXPECT_NE(log.str().find(" are both variant position-learned with seed 1: not two seeds of one variant"),
              std::string::npos)
        << log.str();
    // Seed folders given one by one: named by their variant's folder, so that one sweep's seeds stay one variant.
    const Comparison runs = compare_runs({sweep + "/position-learned/seed-1", dir_ / "copy/position-learned/seed-1",
                                          sweep + "/position-learned/seed-2"});
    ASSERT_EQ(runs.rows.size(), 2u);
    EXPECT_EQ(runs.rows[0].variant, sweep + "/position-learned");
    EXPECT_EQ(runs.rows[0].runs.size(), 2u);
    EXPECT_EQ(runs.rows[1].variant, dir_ / "copy/position-learned");
    EXPECT_EQ(compare_runs({sweep + "/position-learned/seed-1", sweep + "/position-learned/seed-2"}).rows.size(), 1u)
        << "two seeds of a sweep's variant, given one by one, are that variant's";
  }

  // A comparison of other variants written here before left its seeds pages: they go; other files stay.
  const fs::path earlier = dir_ / "compare";
  fs::create_directories(earlier);
  for (const char* name :
       {"seeds_3_old.html", "seeds_.html", "my_seeds_1.html", "seeds_3_old.txt", "seeds_4_mine.html"})
    std::ofstream(earlier / name) << (std::string(name) == "seeds_4_mine.html"
                                          ? "x"
                                          : "<title>poslab: old: its seeds side by side</title>");
  const std::string page = write_comparison(c, earlier.string());
  EXPECT_FALSE(fs::exists(earlier / "seeds_3_old.html")) << "a seeds page of an earlier comparison was left";
  for (const char* name : {"seeds_.html", "my_seeds_1.html", "seeds_3_old.txt", "seeds_4_mine.html"})
    EXPECT_TRUE(fs::exists(earlier / name)) << name << ", no seeds page, was taken";
  const std::string html = slurp(page);
  EXPECT_NE(html.find("poslab compare: 2 variants, 4 runs"), std::string::npos);
  EXPECT_NE(html.find("position-learned"), std::string::npos);
  EXPECT_NE(html.find("±"), std::string::npos);
  EXPECT_EQ(html.find("POSLAB_"), std::string::npos) << "a marker of compare_page.html left unfilled";
  // a wide table is stacked as tables of at most 10 columns after the variant's, so that none scrolls sideways in its
  // box at 1280 pixels (what this counts; the columns' widths are the browser's)
  for (size_t at = html.find("<tr><th>variant</th>"); at != std::string::npos;
       at = html.find("<tr><th>variant</th>", at + 1)) {
    const std::string head = html.substr(at, html.find("</tr>", at) - at);
    size_t columns = 0;
    for (size_t th = head.find("<th"); th != std::string::npos; th = head.find("<th", th + 1)) ++columns;
    EXPECT_LE(columns, 11u) << head;
  }
  EXPECT_NE(html.find("boundary outliers per run</th>"), std::string::npos);
  // whether structure emerged comes right after the runs; the boundary's outliers are per run, not summed
  EXPECT_NE(html.find("<th>variant</th><th>runs</th><th title=\"the last step each run was trained to (a range where "
                      "its seeds differ)\">steps</th><th title=\"absent at the first snapshot"),
            std::string::npos);
  const VariantRow& learned_row = c.rows[0];
  ASSERT_EQ(learned_row.variant, "position-learned");
  EXPECT_EQ(learned_row.boundary_outliers_per_run.n, 2);
  EXPECT_DOUBLE_EQ(learned_row.boundary_outliers_per_run.mean * 2, learned_row.boundary_outliers);
  EXPECT_NE(html.find(fmt::format("<td>position-learned</td><td>2</td><td>6</td><td>{} of 2", learned_row.emerged)),
            std::string::npos);
  EXPECT_EQ(html.find("trained for different numbers of steps"), std::string::npos) << "every run trained 6 steps";
  // The short headers spelled out below the table, for a reader with no pointer to hover with (a phone).
  EXPECT_NE(html.find("<b>probe R²</b>: position probe R² (odd rows);"), std::string::npos);
  EXPECT_NE(html.find("<b>val loss</b>: validation loss at the last step;"), std::string::npos);
  // Runs trained for different numbers of steps: the variant's range, and a note that the figures are not like for
  // like.
  Comparison uneven = c;
  uneven.runs[uneven.rows[0].runs[0]].step = 3;
  const std::string uneven_html = slurp(write_comparison(uneven, dir_ / "compare_uneven"));
  EXPECT_NE(uneven_html.find("<td>position-learned</td><td>2</td><td>3–6</td>"), std::string::npos);
  EXPECT_NE(uneven_html.find("<b>The runs were trained for different numbers of steps (3 to 6):</b>"),
            std::string::npos);
  uneven.runs[uneven.rows[0].runs[0]].step = 5;  // one step apart is apart too
  const std::string near_html = slurp(write_comparison(uneven, dir_ / "compare_near"));
  EXPECT_NE(near_html.find("<td>position-learned</td><td>2</td><td>5–6</td>"), std::string::npos);
  EXPECT_NE(near_html.find("<b>The runs were trained for different numbers of steps (5 to 6):</b>"), std::string::npos);
  // the seeds' agreement beside what random tables of the same shape give, in its own column
  EXPECT_NE(html.find("<th title=\"two independent random tables of the shape\">CKA, random</th>"), std::string::npos);
  EXPECT_NE(html.find(fmt::format("<td>{:.2f}</td>", c.agreement[0].cka_random)), std::string::npos);
  EXPECT_TRUE(fs::is_regular_file(dir_ / "compare/trajectory_k90.png"));
  EXPECT_TRUE(fs::is_regular_file(dir_ / "compare/periodogram.png"));
  // A variant's name is its text in the key ("block_size-256" is no subscript).
  EXPECT_NE(slurp(dir_ / "compare/periodogram.gp").find("title 'position-learned' noenhanced"), std::string::npos);
  // gnuplot's colours repeat after 8 lines: the 9th variant on, each group of 8 draws with its own dash and point.
  Comparison many = c;
  while (many.rows.size() < 10) {
    VariantRow row = c.rows[0];  // position-learned: a table, so a periodogram
    row.variant = "v-" + std::to_string(many.rows.size() + 1);
    many.rows.push_back(row);
  }
  write_comparison(many, dir_ / "compare10");
  const std::string gp = slurp(dir_ / "compare10/periodogram.gp");
  EXPECT_NE(gp.find("dt 1 pt 7 ps 0.5 lc 1 title 'position-learned'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("dt 2 pt 5 ps 0.8 lc 1 title 'v-9'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("dt 2 pt 5 ps 0.8 lc 2 title 'v-10'"), std::string::npos) << gp;
  EXPECT_TRUE(fs::is_regular_file(dir_ / "compare/trajectory_translation_invariance.png"));
  // A count of a few is ticked at whole numbers (the tiny tables hold a few components above the floor at most).
  EXPECT_NE(slurp(dir_ / "compare/trajectory_signal_rank.gp").find("  set ytics 1\n"), std::string::npos);
  EXPECT_EQ(slurp(dir_ / "compare/trajectory_translation_invariance.gp").find("set ytics"), std::string::npos);
  EXPECT_TRUE(fs::is_regular_file(dir_ / "compare/val_loss.svg"));
  EXPECT_TRUE(fs::is_regular_file(dir_ / "compare/comparison.json"));

  // The table's form, pooled: these 6-step tables hold no circle (shares count as 0, the period pools no run)...
  for (const auto& row : c.rows) {
    ASSERT_EQ(row.form_keys, form_metric_keys()) << row.variant;
    const bool learned = row.variant == "position-learned";
    EXPECT_EQ(row.circled, 0) << row.variant;
    EXPECT_EQ(row.form[0].n, learned ? 2 : 0) << "circle_count of " << row.variant;
    if (learned) {
      EXPECT_EQ(row.form[0].mean, 0.0);
      EXPECT_EQ(row.form[2].mean, 0.0) << "circle_share";
      EXPECT_EQ(row.form[1].n, 0) << "circle_period";
    }
  }
  // ...until seed 2's last table is replaced by rows on a circle of period 8 (two turns over the 16 rows).
  const std::string last = sweep + "/position-learned/seed-2/snapshots/wpe_step000006.npy";
  const torch::Tensor angle = torch::arange(16, torch::kFloat64) * (2 * M_PI / 8);
  torch::Tensor circle = 0.01 * torch::randn({16, 32}, torch::TensorOptions().dtype(torch::kFloat64));
  circle.select(1, 0) += torch::cos(angle);
  circle.select(1, 1) += torch::sin(angle);
  circle = circle.to(torch::kFloat32).contiguous();
  test::write_text(last, npy_bytes(circle.data_ptr<float>(), 16, 32));
  const Analysis planted = analyze_table(circle.to(torch::kFloat64), "planted");
  ASSERT_EQ(planted.circles.size(), 1u) << "the planted table is a circle to the analysis";
  const Comparison with_circle = compare_runs({sweep});
  const VariantRow& learned = with_circle.rows[0];
  ASSERT_EQ(learned.variant, "position-learned");
  EXPECT_EQ(learned.circled, 1);
  EXPECT_DOUBLE_EQ(learned.form[0].mean, 0.5) << "circle_count: 1 and 0";
  EXPECT_EQ(learned.form[1].n, 1) << "circle_period: the one run with a circle";
  EXPECT_NEAR(learned.form[1].mean, 8.0, 0.1);
  EXPECT_DOUBLE_EQ(learned.form[2].mean, planted.circles[0].explained / 2) << "circle_share: its share and 0";
  EXPECT_EQ(learned.circle_from.n, 1);
  EXPECT_EQ(learned.circle_from.mean, 6.0) << "seed 2's circle: at its last snapshot only";
  EXPECT_EQ(comparison_json(with_circle)["variants"][0]["circled"].get<int>(), 1);
  EXPECT_NE(comparison_csv(with_circle)
                .find(",circled,circle_from_mean,circle_from_sd,circle_count_mean,circle_count_sd,circle_period_mean"),
            std::string::npos);
  const std::string form_page = slurp(write_comparison(with_circle, dir_ / "compare_circle"));
  EXPECT_NE(form_page.find("<td>position-learned</td><td>1 of 2</td><td>6</td><td>0.5 ± 0.7</td>"), std::string::npos)
      << "the form table: a circle in 1 of 2 runs, circle count 0.5 ± 0.7";

  // PC1 at the period search's end (a ramp: 2P = 32 positions, a lower bound) is counted, not pooled as a period.
  auto write_ramp = [&](const std::string& seed) {
    torch::manual_seed(3);
    torch::Tensor ramp = 0.01 * torch::randn({16, 32}, torch::TensorOptions().dtype(torch::kFloat64));
    ramp.select(1, 0) += torch::linspace(-1, 1, 16, torch::kFloat64);
    ramp = ramp.to(torch::kFloat32).contiguous();
    test::write_text(sweep + "/position-learned/" + seed + "/snapshots/wpe_step000006.npy",
                     npy_bytes(ramp.data_ptr<float>(), 16, 32));
  };
  write_ramp("seed-1");
  const Comparison one_ramp = compare_runs({sweep});
  EXPECT_EQ(one_ramp.rows[0].pc1_ramps, 1);
  EXPECT_DOUBLE_EQ(one_ramp.rows[0].pc1_bound, 32.0);
  EXPECT_EQ(one_ramp.rows[0].pc1_period_below.n, 1);
  EXPECT_NEAR(one_ramp.rows[0].pc1_period_below.mean, 8.0, 0.1) << "the circle's PC1";
  EXPECT_EQ(comparison_json(one_ramp)["variants"][0]["pc1_ramps"].get<int>(), 1);
  EXPECT_EQ(comparison_json(one_ramp)["variants"][0]["pc1_ramp_bound"].get<double>(), 32.0);
  EXPECT_NEAR(comparison_json(one_ramp)["variants"][0]["pc1_period_of_the_rest"]["mean"].get<double>(), 8.0, 0.1);
  EXPECT_EQ(comparison_json(one_ramp)["variants"][0]["pc1_period_of_the_rest"]["n"].get<int>(), 1);
  EXPECT_NE(slurp(write_comparison(one_ramp, dir_ / "compare_ramp")).find("<td>8.0 (1 of 2: ≥ 32)</td>"),
            std::string::npos);
  write_ramp("seed-2");
  const Comparison ramps = compare_runs({sweep});
  EXPECT_EQ(ramps.rows[0].pc1_ramps, 2);
  EXPECT_NE(slurp(write_comparison(ramps, dir_ / "compare_ramps")).find("<td>≥ 32 (a ramp)</td>"), std::string::npos)
      << "not 32.0 ± 0.0, a period measured alike in both runs";
}

// A sweep of fixed tables and none has no learned table to draw: its comparison shows the losses alone.
TEST_F(SweepTest, ASweepWithoutLearnedTablesIsComparedByItsLosses) {
  const SweepSummary s =
      run_sweep(sweep_file("seeds: [1]\ngrid:\n  model.position: [sinusoidal, none]\n", "fixed.yaml"), {});
  EXPECT_EQ(s.finished, 2);
  const Comparison c = compare_runs({dir_ / "runs/fixed"});
  ASSERT_EQ(c.rows.size(), 2u);
  const std::string page = write_comparison(c, dir_ / "compare");
  EXPECT_TRUE(fs::is_regular_file(dir_ / "compare/val_loss.png"));
  EXPECT_FALSE(fs::exists(dir_ / "compare/trajectory_k90.png")) << "no table, no table figure";
  EXPECT_FALSE(fs::exists(dir_ / "compare/periodogram.png")) << "no table, no table figure";
  EXPECT_NE(slurp(page).find("position-sinusoidal"), std::string::npos);
}

// The trainer leaves the report to its caller: a sweep writes each finished run's report when run.report is set.
TEST_F(SweepTest, ASweepWritesEachFinishedRunsReport) {
  const std::string file = sweep_file(
      "seeds: [1]\nset: {run.report: true}\nvariants: [{name: a, set: {}}, {name: b, set: {}}]\n", "rep.yaml");
  SweepOptions one;
  one.max_runs = 1;
  const SweepSummary s = run_sweep(file, one);
  EXPECT_EQ(s.finished, 1);
  EXPECT_TRUE(fs::is_regular_file(dir_ / "runs/rep/a/seed-1/report/index.html"));
  EXPECT_FALSE(fs::exists(dir_ / "runs/rep/b/seed-1/report/index.html")) << "run b was not trained";

  // Killed after run a's last checkpoint, before its report's index.html (written last): the next start writes it.
  fs::remove(dir_ / "runs/rep/a/seed-1/report/index.html");
  const SweepSummary again = run_sweep(file, one);
  EXPECT_EQ(again.done_before, 1);
  const std::string index = dir_ / "runs/rep/a/seed-1/report/index.html";
  EXPECT_TRUE(fs::is_regular_file(index));
  EXPECT_TRUE(run_report_is_current(dir_ / "runs/rep/a/seed-1"));

  // Extended (--set train.max_steps=9) and stopped after run a's new last checkpoint, before its new report: the
  // page of step 6 (put back here) is out of date, and the next start draws it again.
  const std::string six = slurp(index);
  SweepOptions longer = one;
  longer.sets = {"train.max_steps=9"};
  EXPECT_EQ(run_sweep(file, longer).resumed, 1);
  EXPECT_NE(slurp(index).find("drawn from the snapshot of step 9 -->"), std::string::npos);
  test::write_text(index, six);
  EXPECT_FALSE(run_report_is_current(dir_ / "runs/rep/a/seed-1"));
  EXPECT_EQ(run_sweep(file, longer).done_before, 1);
  EXPECT_NE(slurp(index).find("drawn from the snapshot of step 9 -->"), std::string::npos);
  EXPECT_TRUE(run_report_is_current(dir_ / "runs/rep/a/seed-1"));
  // The comparison links each run to its report, from where the page is.
  const std::string page = slurp(write_comparison(compare_runs({dir_ / "runs/rep"}), dir_ / "runs/rep/compare"));
  EXPECT_NE(page.find("<a href=\"../a/seed-1/report/index.html\">report</a>"), std::string::npos) << page;
}

// A comparison of a sweep part-way through: a run stopped short of train.max_steps and the runs not started are
// said and left out; with no finished run there is nothing to compare, and the error says so.
TEST_F(SweepTest, ACompareOfASweepPartWayThroughLeavesOutWhatIsNotFinished) {
  const std::string file =
      sweep_file("seeds: [1]\nvariants: [{name: a, set: {}}, {name: b, set: {}}, {name: c, set: {}}]\n", "part.yaml");
  const std::string dir = dir_ / "runs/part";
  SweepOptions short_of_it;
  short_of_it.max_runs = 1;
  short_of_it.stop_at = 3;
  EXPECT_EQ(run_sweep(file, short_of_it).finished, 0);
  {
    test::CapturedLog log;
    const std::string e = test::error_of([&] { compare_runs({dir}); });
    EXPECT_NE(e.find("compare: no finished run among 1 folder(s)"), std::string::npos) << e;
    EXPECT_NE(log.str().find(dir + "/a/seed-1 is at step 3 of 6: left out until it finishes"), std::string::npos)
        << log.str();
    EXPECT_NE(log.str().find(dir + "/b/seed-1 has not started: left out"), std::string::npos) << log.str();
  }
  SweepOptions one;
  one.max_runs = 1;
  EXPECT_EQ(run_sweep(file, one).resumed, 1);
  test::CapturedLog log;
  const Comparison c = compare_runs({dir});
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.runs.size(), 1u);
  EXPECT_NE(log.str().find(dir + "/c/seed-1 has not started: left out"), std::string::npos) << log.str();
  // and on the page and in its JSON, not in the log alone
  EXPECT_EQ(c.left_out, (std::vector<std::string>{dir + "/b/seed-1 (not started)", dir + "/c/seed-1 (not started)"}));
  EXPECT_EQ(comparison_json(c)["left_out"].size(), 2u);
  const std::string page = slurp(write_comparison(c, dir_ / "part-compare"));
  EXPECT_NE(page.find("<p><b>Left out, not finished</b> (2 runs): " + dir + "/b/seed-1 (not started); " + dir +
                      "/c/seed-1 (not started)."),
            std::string::npos)
      << page;
}

TEST_F(SweepTest, ARunStoppedBeforeItsFirstCheckpointIsTrainedAfresh) {
  const std::string file = sweep_file("seeds: [1]\n", "fresh.yaml");
  run_sweep(file, {});
  const std::string run = sweep_runs(load_sweep(file), {}).at(0).run_dir;
  const std::string table = slurp(run + "/snapshots/wpe_step000006.npy");
  ASSERT_FALSE(table.empty());
  // A latest.pt lost after the run went on (deleted, moved): an error naming it, nothing cleared.
  fs::remove(run + "/checkpoints/latest.pt");
  const std::string lost = test::error_of([&] { run_sweep(file, {}); });
  EXPECT_NE(lost.find(run + "/checkpoints/latest.pt is missing, but the run logged steps up to 6"), std::string::npos)
      << lost;
  EXPECT_EQ(slurp(run + "/snapshots/wpe_step000006.npy"), table);
  EXPECT_EQ(read_jsonl(run + "/snapshots/index.jsonl").size(), 3u);
  // What a start killed before its first latest.pt leaves: snapshot 0, best.pt, step 0's log lines; no latest.pt.
  truncate_logs_after(RunFolder(run), 0);
  fs::remove(run + "/snapshots/wpe_step000006.npy");
  {
    // A live trainer holds the folder (another sweep training it now): nothing is cleared, the run is named.
    const RunLock other(RunFolder(run).lock());
    const std::string held = test::error_of([&] { run_sweep(file, {}); });
    EXPECT_NE(held.find(run + ": another trainer (pid " + std::to_string(::getpid()) + ") is using this run folder"),
              std::string::npos)
        << held;
    EXPECT_TRUE(fs::is_regular_file(run + "/snapshots/index.jsonl"));
  }
  const SweepSummary again = run_sweep(file, {});
  EXPECT_EQ(again.trained, 1);
  EXPECT_EQ(again.finished, 1);
  EXPECT_EQ(slurp(run + "/snapshots/wpe_step000006.npy"), table);
  EXPECT_EQ(read_jsonl(run + "/snapshots/index.jsonl").size(), 3u);  // steps 0, 3, 6: none twice
  EXPECT_EQ(event_files(RunFolder(run).tensorboard_dir()).size(), 1u) << "TensorBoard would show step 0 twice";
}

// A sweep of runs from another run's weights: each run tokenizes with (and records) that checkpoint's tokenizer,
// not the base's, and the sweep, run again, goes on with them rather than taking that for a change of settings.
TEST_F(SweepTest, ASweepFromAnotherRunsWeightsGoesOnWithThatRunsTokenizer) {
  TrainRequest source;
  source.config_path = dir_ / "configs/base.yaml";
  source.overrides = {"run.name=source", "data.tokenizer.type=bpe", "data.tokenizer.vocab_size=300"};
  train(source);
  const std::string from = dir_ / "runs/source/checkpoints/latest.pt";
  const std::string file = sweep_file("seeds: [1]\nset: {train.init_from: " + from + "}\n", "tuned.yaml");
  SweepOptions part;
  part.stop_at = 3;
  run_sweep(file, part);
  const std::string run = sweep_runs(load_sweep(file), {}).at(0).run_dir;
  EXPECT_EQ(config_from_yaml(slurp(run + "/config.yaml"), "run").data.tokenizer.type, "bpe");
  const SweepSummary again = run_sweep(file, {});
  EXPECT_EQ(again.resumed, 1);
  EXPECT_EQ(again.finished, 1);
}

// One sweep per folder at a time (a second one started beside it is an error before it writes anything), and one
// sweep file per folder: another file of the same stem with other contents is an error naming both files, while the
// same file edited, or its text from another path, is the same sweep.
TEST_F(SweepTest, ASweepFolderBelongsToOneSweepAtATimeAndToOneSweepFile) {
  const std::string file = sweep_file("seeds: [1]\n", "one.yaml");
  run_sweep(file, {});
  const std::string dir = dir_ / "runs/one";
  const std::string index = slurp(dir + "/sweep.json");
  {
    const RunLock running((fs::path(dir) / "sweep.lock").string(), "sweep");
    try {
      run_sweep(file, {});
      FAIL() << "a second sweep ran in a folder whose sweep is running";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(dir + ": another sweep (pid " + std::to_string(::getpid()) +
                                           ") is using this sweep folder"),
                std::string::npos)
          << e.what();
    }
    EXPECT_TRUE(fs::exists(dir + "/sweep.lock")) << "the refused sweep removed the running one's lock";
  }
  EXPECT_EQ(run_sweep(file, {}).done_before, 1);
  EXPECT_FALSE(fs::exists(dir + "/sweep.lock")) << "a sweep left its lock";

  test::write_text(dir_ / "configs/other/one.yaml", "base: ../base.yaml\nseeds: [1, 2]\n");
  try {
    run_sweep(dir_ / "configs/other/one.yaml", {});
    FAIL() << "a second sweep file of the same stem took the folder";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir + " is the folder of another sweep file, " + file), std::string::npos)
        << e.what();
    EXPECT_NE(e.hint().find("name: OTHER_NAME in " + dir_ / "configs/other/one.yaml"), std::string::npos) << e.hint();
  }
  EXPECT_EQ(slurp(dir + "/sweep.json"), index);
  EXPECT_FALSE(fs::exists(dir + "/default/seed-2"));
  // An index that does not name its file (an older poslab's) or does not read is written again.
  test::write_text(dir + "/sweep.json", "{not json");
  EXPECT_EQ(run_sweep(file, {}).done_before, 1);
  EXPECT_EQ(slurp(dir + "/sweep.json"), index);
  // The file edited (a seed added), then its text from another path (a copy): the same sweep.
  sweep_file("seeds: [1, 2]\n", "one.yaml");
  EXPECT_EQ(run_sweep(file, {}).trained, 1);
  sweep_file("seeds: [1, 2]\n# the same sweep\n", "one.yaml");  // edited again, named another way
  EXPECT_EQ(run_sweep(dir_ / "configs/sweeps/../sweeps/one.yaml", {}).done_before, 2);
  test::write_text(dir_ / "configs/other/one.yaml", slurp(file));
  EXPECT_EQ(run_sweep(dir_ / "configs/other/one.yaml", {}).done_before, 2);
}

// A sweep's runs share their settings: a run trained by an earlier call with other settings than the files give it
// now is an error naming the run and the key, before anything is trained or written; --set's keys may differ (that
// is how a call extends every run); and a run trained afresh reads the config the sweep resolved at its start, not
// the base again (an edit of the base while a sweep trains reaches none of its runs).
TEST_F(SweepTest, ARunTrainedWithOtherSettingsThanTheFilesGiveNowIsAnError) {
  const std::string file =
      sweep_file("seeds: [1]\nvariants: [{name: a, set: {}}, {name: b, set: {}}, {name: c, set: {}}]\n", "edit.yaml");
  SweepOptions one;
  one.max_runs = 1;
  run_sweep(file, one);  // run a, with the base's 32 channels
  // --set may extend every run, but not change what a started run's checkpoint fixed: refused before any training,
  // or the fresh runs would train on another split than run a.
  SweepOptions split;
  split.sets = {"data.val_fraction=0.2"};
  try {
    run_sweep(file, split);
    FAIL() << "a --set of the split was taken by a sweep with a started run";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sweep edit: --set data.val_fraction=0.2: "), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("leave that key out of --set"), std::string::npos) << e.hint();
  }
  EXPECT_FALSE(fs::exists(dir_ / "runs/edit/b")) << "run b trained on another split";
  const std::string base = slurp(dir_ / "configs/base.yaml");
  // How a run is carried out (here its threads) may change between calls; what it trains may not.
  const std::string threads = std::regex_replace(base, std::regex("threads: 1"), "threads: 2");
  ASSERT_NE(threads, base);
  test::write_text(dir_ / "configs/base.yaml", threads);
  EXPECT_EQ(run_sweep(file, one).trained, 1);  // run b
  const std::string edited = std::regex_replace(threads, std::regex("n_embd: 32"), "n_embd: 16");
  ASSERT_NE(edited, base);
  test::write_text(dir_ / "configs/base.yaml", edited);
  fs::remove(dir_ / "runs/edit/sweep.json");
  try {
    run_sweep(file, {});
    FAIL() << "a base changed since run a trained was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("edit/a/seed-1 trained with other settings"), std::string::npos) << what;
    EXPECT_NE(what.find("model.n_embd 32 in the run, 16 now"), std::string::npos) << what;
    EXPECT_NE(std::string(e.hint()).find("another name:"), std::string::npos) << e.hint();
  }
  EXPECT_FALSE(fs::exists(dir_ / "runs/edit/c")) << "run c was trained with the new settings";
  EXPECT_FALSE(fs::exists(dir_ / "runs/edit/sweep.json")) << "the refused call wrote the sweep's index";

  test::write_text(dir_ / "configs/base.yaml", base);
  SweepOptions longer;
  longer.sets = {"train.max_steps=9"};
  const SweepSummary s = run_sweep(file, longer);
  EXPECT_EQ(s.resumed, 2);
  EXPECT_EQ(s.trained, 1);
  EXPECT_EQ(s.finished, 3);
  // Every run finished, a --set of the model is refused all the same: the runs keep their model, and the sweep's
  // index would record a width none of them has.
  const std::string index = slurp(dir_ / "runs/edit/sweep.json");
  SweepOptions wider;
  wider.sets = {"train.max_steps=9", "model.n_embd=64"};
  const std::string e = test::error_of([&] { run_sweep(file, wider); });
  EXPECT_NE(e.find("checkpoint architecture differs from the requested model: model.n_embd 32 in the checkpoint vs "
                   "64"),
            std::string::npos)
      << e;
  EXPECT_EQ(slurp(dir_ / "runs/edit/sweep.json"), index);
  // A sweep's folder copied elsewhere goes on there: the sweep names each run's new place (run.out_dir), which its
  // config.yaml, written where it trained, does not.
  fs::create_directories(dir_ / "moved");
  fs::copy(dir_ / "runs/edit", dir_ / "moved/edit", fs::copy_options::recursive);
  SweepOptions moved;
  moved.sets = {"train.max_steps=10", "run.out_dir=" + (dir_ / "moved")};
  const SweepSummary m = run_sweep(file, moved);
  EXPECT_EQ(m.resumed, 3);
  EXPECT_EQ(m.finished, 3);
  EXPECT_EQ(load_config(dir_ / "moved/edit/a/seed-1/config.yaml").run.out_dir, dir_ / "moved/edit/a");
  EXPECT_EQ(read_checkpoint_meta(dir_ / "runs/edit/a/seed-1/checkpoints/latest.pt").step, 9)
      << "the original was left as it was";

  // A fresh run of a sweep: the config as the sweep resolved it, whatever its base file says by then.
  TrainRequest req;
  req.config_path = dir_ / "configs/base.yaml";
  req.config_yaml = to_yaml(load_config(req.config_path, {"run.name=fixed"}));
  test::write_text(dir_ / "configs/base.yaml", edited);
  const TrainSummary t = train(req);
  EXPECT_EQ(load_config(RunFolder(t.run_dir).config()).model.n_embd, 32);
}

TEST_F(SweepTest, PooledIsTheMeanAndSampleStandardDeviation) {
  const Stat s = pooled({1.0, 2.0, 6.0, NAN});
  EXPECT_EQ(s.n, 3);
  EXPECT_DOUBLE_EQ(s.mean, 3.0);
  EXPECT_DOUBLE_EQ(s.sd, std::sqrt(7.0));  // ((4 + 1 + 9) / 2)
  EXPECT_EQ(pooled({5.0}).n, 1);
  EXPECT_TRUE(std::isnan(pooled({5.0}).sd));
  EXPECT_EQ(pooled({}).n, 0);
}

// The compare page's bands: mean ± sd at each x, within the seeds' own values (a count of 0, 0 and 3 circles is
// 1 ± 1.7, its band 0 … 2.7); one seed's value is its band; a seed without a value at some x (NaN) is left out there.
TEST_F(SweepTest, ABandIsMeanAndSdWithinTheSeedsOwnValues) {
  const SeedBand b =
      seed_band({{{0, 0.0}, {100, 1.0}, {200, 2.0}}, {{0, 0.0}, {100, 1.0}, {200, NAN}}, {{0, 3.0}, {100, 1.0}}});
  ASSERT_EQ(b.x, (std::vector<double>{0, 100, 200}));
  EXPECT_DOUBLE_EQ(b.mean[0], 1.0);
  EXPECT_DOUBLE_EQ(b.lo[0], 0.0);  // not 1 − √3
  EXPECT_DOUBLE_EQ(b.hi[0], 1.0 + std::sqrt(3.0));
  EXPECT_DOUBLE_EQ(b.lo[1], 1.0);  // all three equal: sd 0
  EXPECT_DOUBLE_EQ(b.hi[1], 1.0);
  // 0 and 2 circles: 1 ± 1.4, the band 0 … 2 (the seeds' own lowest and highest)
  const SeedBand two = seed_band({{{0, 0.0}}, {{0, 2.0}}});
  EXPECT_DOUBLE_EQ(two.mean[0], 1.0);
  EXPECT_DOUBLE_EQ(two.lo[0], 0.0);
  EXPECT_DOUBLE_EQ(two.hi[0], 2.0);
  EXPECT_DOUBLE_EQ(b.mean[2], 2.0);  // one seed with a value
  EXPECT_DOUBLE_EQ(b.lo[2], 2.0);
  EXPECT_DOUBLE_EQ(b.hi[2], 2.0);
}

// A --set reaches every run, over what a variant sets: said for each variant it reaches so, and refused where it
// makes two variants the same run (their comparison would show one run as two).
TEST_F(SweepTest, ASetOverAVariantsKeyIsSaidAndOneThatUndoesAVariantIsRefused) {
  const Sweep undone = load_sweep(
      sweep_file("seeds: [1]\nvariants:\n  - {name: short, set: {}}\n  - {name: long, set: {train.max_steps: 8}}\n",
                 "steps.yaml"));
  const std::string e = test::error_of([&] { sweep_runs(undone, {"train.max_steps=4"}); });
  EXPECT_NE(e.find("steps.yaml: variants short and long would be the same run (--set train.max_steps=4 replaces "
                   "variant long's train.max_steps: 8)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("leave that --set out"), std::string::npos) << e;
  EXPECT_EQ(sweep_runs(undone, {"train.lr=0.01"}).size(), 2u) << "a key no variant sets";
  // Two controls alike from the start are not the --set's doing; a variant's last value of a key is its value.
  const Sweep controls =
      load_sweep(sweep_file("seeds: [1]\nvariants:\n  - {name: a, set: {}}\n  - {name: b, set: {}}\n  - {name: c, set: "
                            "{train.max_steps: 8}}\n"
                            "grid:\n  train.lr: [0.001, 0.002]\n",
                            "controls.yaml"));
  EXPECT_EQ(sweep_runs(controls, {"model.n_layer=1"}).size(), 6u);
  const std::string crossed = test::error_of([&] { sweep_runs(controls, {"train.max_steps=4"}); });
  EXPECT_NE(crossed.find("variants a_lr-0.001 and c_lr-0.001 would be the same run (--set train.max_steps=4 replaces "
                         "variant c_lr-0.001's train.max_steps: 8)"),
            std::string::npos)
      << crossed;

  const Sweep apart =
      load_sweep(sweep_file("seeds: [1]\nvariants:\n  - {name: a, set: {train.max_steps: 4, model.n_layer: 1}}\n"
                            "  - {name: b, set: {train.max_steps: 8, model.n_layer: 2}}\n",
                            "apart.yaml"));
  test::CapturedLog log;
  EXPECT_EQ(sweep_runs(apart, {"train.max_steps=2"}).size(), 2u);
  EXPECT_NE(log.str().find("--set train.max_steps=2 replaces variant a's train.max_steps: 4"), std::string::npos)
      << log.str();
  EXPECT_NE(log.str().find("--set train.max_steps=2 replaces variant b's train.max_steps: 8"), std::string::npos)
      << log.str();
}

// Each run's config is checked as it will train: the sweep's set:, the variant's, then --set. A --set that is valid
// only with what the variants set (a head count that divides each variant's width) passes; one that fails names
// the value the run has.
TEST_F(SweepTest, ASetIsCheckedWithEachVariantItReaches) {
  const std::string widths = sweep_file("seeds: [1]\ngrid:\n  model.n_embd: [48, 96]\n", "widths.yaml");
  const Sweep w = load_sweep(widths, {"model.n_head=3"});
  EXPECT_EQ(sweep_runs(w, {"model.n_head=3"}).size(), 2u);
  EXPECT_EQ(sweep_dir(w, {"model.n_head=3"}), dir_ / "runs/widths");
  const std::string heads = sweep_file("seeds: [1]\ngrid:\n  model.n_head: [2, 3]\n", "heads.yaml");
  EXPECT_EQ(load_sweep(heads, {"model.n_embd=6"}).variants.size(), 2u);
  const std::string e = test::error_of([&] { load_sweep(heads, {"model.n_embd=8"}); });
  EXPECT_NE(e.find("heads.yaml: variant n_head-3: "), std::string::npos) << e;
  EXPECT_NE(e.find("--set: model.n_embd = 8: must be divisible by model.n_head (3, from "), std::string::npos) << e;
  // Two variants a --set makes alike are sweep_runs' to name (which --set, which variant's value), not "one value
  // spelled two ways".
  const std::string steps = sweep_file(
      "seeds: [1]\nvariants:\n  - {name: a, set: {train.max_steps: 4}}\n  - {name: b, set: "
      "{train.max_steps: 8}}\n",
      "steps.yaml");
  const Sweep undone = load_sweep(steps, {"train.max_steps=2"});
  EXPECT_NE(test::error_of([&] { sweep_runs(undone, {"train.max_steps=2"}); }).find("would be the same run"),
            std::string::npos);
}

TEST_F(SweepTest, BadSweepFilesAreErrorsNamingTheFileAndKey) {
  // A key a variant sets and the grid sweeps: the grid's values would replace the variant's without a word.
  EXPECT_EQ(sweep_failure("seeds: [1]\ngrid: {model.position: [learned, sinusoidal]}\n"
                          "variants: [{name: v1, set: {model.position: none}}]\n"),
            std::make_pair(dir_ / "configs/sweeps/bad.yaml" +
                               ": variant v1 sets model.position (none), which grid: sweeps too: the grid's values "
                               "would replace it in every run of the variant",
                           std::string("set model.position in one place: in the variants or in grid:")));
  EXPECT_NE(sweep_error("seeds: [1]\ngird: {model.n_layer: [1]}\n").find("bad.yaml: unknown key 'gird'"),
            std::string::npos);
  EXPECT_EQ(sweep_hint("seeds: [1]\ngird: {model.n_layer: [1]}\n"),
            "did you mean grid? a sweep file has: name, base, seeds, set, grid, variants");
  EXPECT_EQ(sweep_hint("seed: [1]\n"),
            "did you mean seeds or set? a sweep file has: name, base, seeds, set, grid, variants");
  EXPECT_EQ(sweep_hint("seeds: [1]\nbatch: 3\n"), "a sweep file has: name, base, seeds, set, grid, variants");
  EXPECT_NE(sweep_error("grid: {model.n_layer: [1]}\n").find("bad.yaml: seeds: missing"), std::string::npos);
  EXPECT_NE(sweep_error("seeds: []\n").find("seeds: expected a non-empty list"), std::string::npos);
  test::write_text(dir_ / "configs/sweeps/self.yaml", "base: self.yaml\nseeds: [1]\n");
  EXPECT_EQ(test::error_of([&] { load_sweep(dir_ / "configs/sweeps/self.yaml"); }),
            dir_ / "configs/sweeps/self.yaml" +
                ": base = self.yaml: is this sweep file itself | name the config every run starts from, e.g. base: "
                "../small.yaml");
  EXPECT_NE(sweep_error("seeds: [1, 1]\n").find("repeats a seed"), std::string::npos);
  // Text where text goes: a list, a map or an empty value (~, "null" to yaml-cpp) is named with what the key takes.
  const std::vector<std::pair<std::string, std::string>> not_text = {
      {"name: {a: 1}\nseeds: [1]\n", "bad.yaml: name: expected a name, not {a: 1}"},
      {"seeds: [1]\nvariants: [{name: [a]}]\n", "bad.yaml: variants[0].name: expected a name, not [a]"},
      {"seeds: [1]\nvariants: [{name: ~}]\n", "bad.yaml: variants[0].name: expected a name, not an empty value"},
      {"seeds: [1]\ngrid: {[a]: [1]}\n", "bad.yaml: grid: expected config keys (SECTION.NAME), not [a]"},
      {"seeds: [1]\nset: {[a]: 1}\n", "bad.yaml: set: expected config keys (SECTION.NAME), not [a]"},
      {"? [a]\n: 1\nseeds: [1]\n", "bad.yaml: expected keys that are plain names, not [a]"},
  };
  for (const auto& [yaml, message] : not_text)
    EXPECT_NE(sweep_error(yaml).find(message), std::string::npos) << yaml << sweep_error(yaml);
  fs::create_directories(dir_ / "configs/sweeps/folder");
  const std::string no_base = dir_ / "configs/sweeps/no_base.yaml";
  for (const auto& [base, message] : std::vector<std::pair<std::string, std::string>>{
           {"[x]", "no_base.yaml: base: expected the path of a config file, not [x]"},
           {"~", "no_base.yaml: base: expected the path of a config file, not an empty value"},
           {"folder", "no_base.yaml: base = folder: a folder ("}}) {
    test::write_text(no_base, "base: " + base + "\nseeds: [1]\n");
    const std::string e = test::error_of([&] { load_sweep(no_base); });
    EXPECT_NE(e.find(message), std::string::npos) << e;
  }
  // Each seed is read as run.seed takes it, when the file is read: not hours in, when its run starts.
  EXPECT_NE(sweep_error("seeds: [1, -1]\n")
                .find("bad.yaml: seeds: -1: expected a whole number from 0 to 9223372036854775807"),
            std::string::npos);
  EXPECT_EQ(sweep_hint("seeds: [1, -1]\n"), "a seed is 0 or more");
  EXPECT_NE(sweep_error("seeds: [1, 2.5]\n").find("bad.yaml: seeds: 2.5: expected a whole number"), std::string::npos);
  EXPECT_NE(sweep_error("seeds: [[1]]\n").find("bad.yaml: seeds: [1]: expected a whole number"), std::string::npos);
  EXPECT_NE(sweep_error("seeds: [99999999999999999999]\n").find("expected a whole number from 0 to"),
            std::string::npos);
  EXPECT_NE(sweep_error("seeds: [010]\n")
                .find("bad.yaml: seeds: 010: write 010 without its leading 0 (a whole number with one reads as octal)"),
            std::string::npos);
  EXPECT_NE(sweep_error("seeds: [1]\ngrid: {model.n_layer: 2}\n").find("grid.model.n_layer: expected a non-empty list"),
            std::string::npos);
  EXPECT_NE(sweep_error("seeds: [1]\ngrid: {model.n_layers: [1, 2]}\n").find("variant n_layers-1"), std::string::npos);
  EXPECT_NE(sweep_error("seeds: [1]\ngrid: {model.n_layers: [1, 2]}\n").find("model.n_layers"), std::string::npos);
  EXPECT_NE(sweep_error("seeds: [1]\ngrid: {model.n_head: [3]}\n").find("variant n_head-3"), std::string::npos);
  // A variant's value is the sweep file's, not a --set's: the error names it so (its hint too, in load_sweep's).
  EXPECT_NE(sweep_error("seeds: [1]\nvariants: [{name: odd, set: {model.n_head: 3}}]\n")
                .find("bad.yaml: variant odd: model.n_head = 3: must divide model.n_embd (32, from "),
            std::string::npos)
      << sweep_error("seeds: [1]\nvariants: [{name: odd, set: {model.n_head: 3}}]\n");
  EXPECT_NE(sweep_error("seeds: [1]\nvariants: [{name: a}, {name: a}]\n").find("two variants are named 'a'"),
            std::string::npos);
  // One value listed twice, or spelled two ways, would train one config twice and compare it with itself.
  const std::string bad = dir_ / "configs/sweeps/bad.yaml";
  EXPECT_EQ(sweep_failure("seeds: [1]\ngrid: {train.lr: [0.01, 0.01]}\n"),
            std::make_pair(bad + ": grid.train.lr: 0.01 is listed twice", std::string("list each value once")));
  EXPECT_EQ(sweep_failure("seeds: [1]\ngrid: {model.bias: [true, True, yes]}\n"),
            std::make_pair(bad + ": variants bias-true and bias-True train the same config (model.bias: true and True "
                                 "are the same value)",
                           std::string("list each value once, spelled one way")));
  EXPECT_NE(
      sweep_error("seeds: [1]\ngrid: {train.lr: [0.01, 1e-2]}\n")
          .find("variants lr-0.01 and lr-1e-2 train the same config (train.lr: 0.01 and 1e-2 are the same value)"),
      std::string::npos);
  EXPECT_EQ(
      sweep_error("seeds: [1]\nvariants: [{name: a, set: {model.bias: yes}}, {name: b, set: {model.bias: on}}]\n"),
      bad + ": variants a and b train the same config (model.bias: yes and on are the same value)");
  EXPECT_NE(sweep_error("seeds: [1]\nvariants: [{name: a/b}]\n").find("not a folder name"), std::string::npos);
  EXPECT_NE(sweep_error("seeds: [1]\nvariants: [{name: a, sett: {}}]\n").find("unknown key 'sett'"), std::string::npos);
  // The seed and the folder of each run are the sweep's: set anywhere, they would be replaced without a word.
  EXPECT_NE(sweep_error("seeds: [1, 2]\ngrid: {run.seed: [1, 2]}\n").find("variant seed-1 sets run.seed"),
            std::string::npos);
  EXPECT_NE(sweep_error("seeds: [1]\nset: {run.seed: 5}\n").find("set: sets run.seed"), std::string::npos);
  EXPECT_NE(
      sweep_error("seeds: [1]\nvariants: [{name: a, set: {run.out_dir: x}}]\n").find("variant a sets run.out_dir"),
      std::string::npos);
  // A key given twice (yaml-cpp keeps one without a word) and a second document (dropped without a word).
  EXPECT_NE(sweep_error("seeds: [1]\nseeds: [2]\n").find("bad.yaml: 'seeds' appears twice"), std::string::npos);
  EXPECT_NE(sweep_error("seeds: [1]\nset: {train.max_steps: 2, train.max_steps: 3}\n")
                .find("'set.train.max_steps' appears twice"),
            std::string::npos);
  EXPECT_NE(sweep_error("seeds: [1]\nvariants:\n  - {name: a, set: {model.n_layer: 1}}\n"
                        "  - {name: b, set: {model.n_layer: 1, model.n_layer: 2}}\n")
                .find("'variants[1].set.model.n_layer' appears twice"),
            std::string::npos);
  EXPECT_NE(sweep_error("seeds: [1]\n---\ngrid: {model.n_layer: [1, 2]}\n").find("more than one YAML document"),
            std::string::npos);
  EXPECT_EQ(sweep_error("seeds: [1]\n...\n# the end\n"), "") << "one document, its end marked";
  const Sweep ok = load_sweep(sweep_file("seeds: [1]\n", "ok.yaml"));
  try {
    sweep_runs(ok, {"run.seed=3"});
    ADD_FAILURE() << "--set run.seed=3 taken by a sweep";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(" sets run.seed, which the sweep sets for each run"), std::string::npos)
        << e.what();
    EXPECT_EQ(e.hint(), "list the seeds in seeds: [...]");
  }
  try {
    test::write_text(dir_ / "configs/sweeps/nobase.yaml", "base: missing.yaml\nseeds: [1]\n");
    load_sweep(dir_ / "configs/sweeps/nobase.yaml");
    FAIL() << "a missing base config was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("base = missing.yaml: no such config file"), std::string::npos) << e.what();
  }
}

// The keys a sweep's runs may differ in between calls: how a run is carried out, never what it trains.
TEST(Sweep, RunsMayDifferInHowTheyRunNotInWhatTheyTrain) {
  for (const char* key : {"run.threads", "run.device", "run.kernels", "data.cache_dir", "train.cuda_graph"})
    EXPECT_TRUE(says_how_a_run_runs(key)) << key;
  for (const char* key : {"run.seed", "train.tf32", "train.adamw", "model.n_embd", "data.corpus"})
    EXPECT_FALSE(says_how_a_run_runs(key)) << key;
}

// The ETA's count: the runs not finished from this one on (not started: step -1), no more than --max-runs leaves.
TEST(Sweep, TheEtaCountsTheRunsThisCallWillTrain) {
  const std::vector<int64_t> max_steps = {10, 10, 10, 10, 10, 10};
  const std::vector<int64_t> steps = {10, -1, 4, 10, -1, -1};  // done, new, interrupted, done, new, new
  EXPECT_EQ(runs_left_to_train(steps, max_steps, 1, 0, 0), 4);
  EXPECT_EQ(runs_left_to_train(steps, max_steps, 2, 0, 1), 3);
  EXPECT_EQ(runs_left_to_train(steps, max_steps, 5, 0, 3), 1);
  // --max-runs 3: the first counts 3 of the 4; after two trained, the one it will train.
  EXPECT_EQ(runs_left_to_train(steps, max_steps, 1, 3, 0), 3);
  EXPECT_EQ(runs_left_to_train(steps, max_steps, 4, 3, 2), 1);
  EXPECT_EQ(runs_left_to_train(steps, max_steps, 5, 3, 3), 0);
  // A run extended past its old end (a larger max_steps now) is still to train.
  EXPECT_EQ(runs_left_to_train({10}, {20}, 0, 0, 0), 1);
}

// The example sweeps load: every variant's config is valid, each has at least 3 seeds and 2 variants.
TEST(ExampleSweeps, EveryShippedSweepLoads) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(fs::path(poslab::test::source_dir()) / "configs" / "sweeps")) {
    SCOPED_TRACE(entry.path().string());
    const Sweep s = load_sweep(entry.path().string());
    EXPECT_GE(s.seeds.size(), 3u);
    EXPECT_GE(s.variants.size(), 2u);
    names.insert(entry.path().stem().string());
  }
  for (const char* name : {"position", "decay", "block_size", "init_scale", "default_seeds", "circles_corpus",
                           "circles_shakespeare", "circles_small", "circles_table_lr", "circles_dropout",
                           "circles_block_size", "circles_longer", "circles_model", "circles_rows"})
    EXPECT_EQ(names.count(name), 1u) << "configs/sweeps/" << name << ".yaml (the docs' results come from it)";
}

TEST_F(SweepTest, CompareNamesAFolderThatHoldsNoRun) {
  try {
    compare_runs({dir_ / "configs"});
    FAIL() << "a folder without runs was compared";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("configs: neither a run folder"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace poslab
