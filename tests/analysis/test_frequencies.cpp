// The analysis's periods, circles, helix, periodogram, strongest-frequency fit, translation invariance and
// monotonicity on whole tables: planted structure of known answer, and NumPy's numbers on two planted helices (one
// found turned apart), GPT-2's rows 1-63 and a real run's table (tests/fixtures/periodicity_numpy.json,
// scripts/periodicity_numpy.py).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>

#include "analysis/analysis.h"
#include "analysis/baselines.h"
#include "analysis/format.h"
#include "analysis/table_io.h"
#include "source_paths.h"
#include "test_tensors.h"

namespace poslab {
namespace {

std::string frequency_fixture(const std::string& rel) { return test::source_dir() + "/tests/fixtures/" + rel; }

struct Wave {
  double period, phase, amplitude;
};

// Waves of the given periods (in positions) on random orthonormal directions, plus noise.
torch::Tensor planted_waves(int64_t P, int64_t d, const std::vector<Wave>& waves, double noise, uint64_t seed) {
  auto Q = std::get<0>(torch::linalg_qr(test::gaussian({d, static_cast<int64_t>(waves.size())}, seed)));  // (d, k)
  auto pos = torch::arange(P, torch::kFloat64);
  std::vector<torch::Tensor> cols;
  for (const Wave& w : waves) cols.push_back(w.amplitude * torch::cos(2 * M_PI * pos / w.period + w.phase));
  return torch::stack(cols, 1).matmul(Q.transpose(0, 1)) + noise * test::gaussian({P, d}, seed + 1);  // (P, d)
}

TEST(Frequencies, EveryComponentAboveTheFloorGetsItsPeriod) {
  // six waves at distinct periods, amplitudes falling: six components above the floor, each at its own period
  const std::vector<double> periods = {96.0, 40.0, 24.5, 13.0, 9.3, 6.0};
  std::vector<Wave> waves;
  for (size_t k = 0; k < periods.size(); ++k) waves.push_back({periods[k], 0.5 * k, 1.0 - 0.12 * k});
  const Analysis a = analyze_table(planted_waves(192, 48, waves, 0.01, 3), "six");
  EXPECT_EQ(a.noise.signal_rank, 6);
  ASSERT_EQ(a.pc_frequencies.size(), 6u);  // more than top_pcs (4): every component above the floor
  std::vector<double> found;
  for (const auto& f : a.pc_frequencies) {
    found.push_back(f.period);
    EXPECT_LT(f.spectral_entropy, 0.5) << "PC" << f.component;
    EXPECT_EQ(f.projection.empty(), f.component > 4) << "PC" << f.component;  // projections of the top four only
  }
  std::sort(found.begin(), found.end());
  std::vector<double> want = periods;
  std::sort(want.begin(), want.end());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(found[k] / want[k], 1.0, 0.02) << want[k];
  EXPECT_NEAR(std::accumulate(a.periodogram.begin(), a.periodogram.end(), 0.0), 1.0, 1e-9);
  EXPECT_EQ(a.periodogram.size(), 96u);
}

TEST(Frequencies, APlantedHelixIsNamedWithItsPeriodAndShare) {
  // cos and sin at a period of 16 positions (8 turns) with a ramp: a helix holding nearly all the variance
  const int64_t P = 128, d = 32;
  auto Q = std::get<0>(torch::linalg_qr(test::gaussian({d, 3}, 5)));
  auto pos = torch::arange(P, torch::kFloat64);
  auto coords =
      torch::stack({torch::cos(2 * M_PI * pos / 16), torch::sin(2 * M_PI * pos / 16), 3 * (pos / (P - 1) - 0.5)}, 1);
  const Analysis a = analyze_table(coords.matmul(Q.transpose(0, 1)) + 0.01 * test::gaussian({P, d}, 6), "helix");
  ASSERT_EQ(a.circles.size(), 1u);
  EXPECT_NEAR(a.circles[0].period, 16.0, 0.05);
  EXPECT_GT(a.circles[0].circularity, 0.95);
  ASSERT_TRUE(a.helix.has_value());
  EXPECT_NEAR(a.helix->circle.period, 16.0, 0.05);
  EXPECT_GT(a.helix->explained, 0.98);
  const std::string text = summary_text(a);
  EXPECT_NE(text.find("helix         PC"), std::string::npos) << text;
  // the ramp: half a cycle over the table at most, the longest period the search names (2P), read as a bound
  EXPECT_NE(text.find("along PC1 (period ≥256.0)"), std::string::npos) << text;
  const auto j = to_json(a);
  ASSERT_TRUE(j["circles"].is_array());
  EXPECT_EQ(j["circles"].size(), 1u);
  EXPECT_EQ(j["circle_count"].get<int>(), 1);
  EXPECT_NEAR(j["helix"]["circle"]["period"].get<double>(), 16.0, 0.05);
  EXPECT_NEAR(j["circle_period"].get<double>(), 16.0, 0.05);
}

TEST(Frequencies, APlantedCircleWithoutASlowAxisIsACircleAndNoHelix) {
  // cos and sin at a period of 12.5 positions, with a third wave at a period of 7: one circle, no helix
  const Analysis a = analyze_table(
      planted_waves(100, 16, {{12.5, 0.0, 1.0}, {12.5, -M_PI / 2, 1.0}, {7.0, 0.3, 0.5}}, 0.001, 9), "circle");
  EXPECT_EQ(a.noise.signal_rank, 3);
  ASSERT_EQ(a.circles.size(), 1u);
  EXPECT_NEAR(a.circles[0].period, 12.5, 1e-3);
  EXPECT_GT(a.circles[0].circularity, 0.99);
  EXPECT_GT(a.circles[0].concentration, 0.99);
  EXPECT_FALSE(a.helix.has_value());
  EXPECT_NE(summary_text(a).find("circles       PC"), std::string::npos);
}

TEST(Frequencies, NoiseHasNoCircleNoHelixAndNoOffsetStructure) {
  const Analysis a = analyze_table(random_table(128, 64, 0.02, 1), "noise");
  EXPECT_TRUE(a.circles.empty());
  EXPECT_FALSE(a.helix.has_value());
  EXPECT_LT(a.translation_invariance, 0.1);
  EXPECT_NEAR(a.monotonicity, 0.5, 0.02);
  EXPECT_TRUE(to_json(a)["helix"].is_null());
  EXPECT_TRUE(to_json(a)["circle_period"].is_null());
}

TEST(Frequencies, StrongestFrequenciesFitWhatTheLowestMiss) {
  // all the power at periods of about 6 positions: the 8 lowest frequencies explain little, the 8 strongest nearly all
  const Analysis a =
      analyze_table(planted_waves(120, 32, {{6.0, 0.0, 1.0}, {6.0, 1.3, 0.8}, {5.0, 0.4, 0.6}}, 0.01, 7), "fast");
  EXPECT_LT(a.sinusoid_r2, 0.1);
  EXPECT_GT(a.sinusoid_r2_strongest, 0.99);
  ASSERT_EQ(a.strongest_frequencies.size(), 8u);
  EXPECT_TRUE(a.strongest_frequencies[0] == 20 || a.strongest_frequencies[0] == 24) << a.strongest_frequencies[0];
  // The Nyquist bin (f = P/2, where sin is 0 at every row) is no candidate, however strong: a column that flips sign
  // each row of 16 puts most of the power there, and the 7 strongest are among f = 1 … 7.
  auto flip = torch::zeros({16, 3}, torch::kFloat64);
  for (int64_t p = 0; p < 16; ++p) flip[p][0] = p % 2 ? -1.0 : 1.0;
  flip.slice(1, 1, 3).copy_(random_table(16, 2, 0.1, 3));
  const Analysis nyquist = analyze_table(flip, "flip");
  ASSERT_EQ(nyquist.strongest_frequencies.size(), 7u);
  for (int f : nyquist.strongest_frequencies) EXPECT_TRUE(f >= 1 && f <= 7) << f;
  EXPECT_GT(nyquist.periodogram.back(), 0.5) << "the case this checks: most power at the Nyquist bin";
}

TEST(Frequencies, ASinusoidalTableIsTranslationInvariantAndItsShuffleIsNot) {
  const Analysis a = analyze_table(synthetic_table("sinusoidal", 128, 64, 0), "sin");
  EXPECT_GT(a.translation_invariance, 0.99);
  EXPECT_LT(a.shuffled_translation_invariance, 0.1);
  EXPECT_NEAR(a.shuffled_monotonicity, 0.5, 0.05);
}

// A helix found turned apart says so in the summary and the JSON: the three components, the axes' weights on them
// and the axes' curves; one found on its own components has neither.
TEST(Frequencies, ATurnedHelixIsSaidAndWrittenSo) {
  const Analysis turned = analyze_table(read_npy_table(frequency_fixture("planted_helix_even_96x24.npy")), "even");
  ASSERT_TRUE(turned.helix && turned.helix->rotated);
  EXPECT_NE(summary_text(turned).find("turned apart within PC1, PC2 and PC3"), std::string::npos)
      << summary_text(turned);
  const auto h = to_json(turned)["helix"];
  EXPECT_TRUE(h["rotated"].get<bool>());
  EXPECT_EQ(h["components"].size(), 3u);
  EXPECT_EQ(h["components"][2].get<int>(), h["slow_component"].get<int>());
  for (const char* axis : {"circle_first", "circle_second", "slow"}) EXPECT_EQ(h["axes"][axis].size(), 3u) << axis;
  ASSERT_EQ(h["projections"].size(), 3u);
  EXPECT_EQ(h["projections"][2].size(), 96u);

  const Analysis plain = analyze_table(read_npy_table(frequency_fixture("planted_helix_96x24.npy")), "plain");
  ASSERT_TRUE(plain.helix && !plain.helix->rotated);
  EXPECT_NE(summary_text(plain).find("PC2+PC3 (period 27.7) along PC1"), std::string::npos) << summary_text(plain);
  const auto p = to_json(plain)["helix"];
  EXPECT_FALSE(p["rotated"].get<bool>());
  EXPECT_FALSE(p.contains("axes"));
  EXPECT_FALSE(p.contains("projections"));

  // A real table with a circle of PC2 and PC4 (7.3 %) beside a ramp (PC1) whose first row stands out: the ramp's
  // power leaks from its peak (49.7 %), its variance does not leave half a cycle and one cycle (94 %). It is the
  // slow axis, untouched; PC6 (0.3 %, a period of 5 positions), a circle coordinate's variance ÷ 12, is not.
  const Analysis rows128 =
      analyze_table(read_npy_table(frequency_fixture("runs/circles_rows128_seed1/wpe_step001500.npy")), "128");
  ASSERT_EQ(rows128.circles.size(), 1u);
  EXPECT_EQ(rows128.circles[0].first, 2);
  EXPECT_EQ(rows128.circles[0].second, 4);
  EXPECT_LT(rows128.pc_frequencies[0].power_share, 0.5);
  EXPECT_GT(rows128.pc_frequencies[0].slow_share, 0.9);
  ASSERT_TRUE(rows128.helix.has_value());
  EXPECT_FALSE(rows128.helix->rotated);
  EXPECT_EQ(rows128.helix->slow, 1);
  EXPECT_NE(summary_text(rows128).find("PC2+PC4 (period 103.9) along PC1"), std::string::npos) << summary_text(rows128);
  // The periods line shows what the slow rule read: the ramp's slow share beside its peak's, none for a wave.
  const std::string text = summary_text(rows128);
  EXPECT_NE(text.find("PC1 ≥256.0 (50%, H 0.48, slow 94%) | PC2 "), std::string::npos) << text;
  EXPECT_NE(text.find(" | PC3 118.2 (18%, H 0.89) | "), std::string::npos) << text;
  EXPECT_NE(text.find(" | PC7 52.9 (9%, H 0.88)\n"), std::string::npos) << text;  // the last of the 7 above the floor
  EXPECT_EQ(text.find("more components"), std::string::npos) << text;
  const std::string gpt2 =
      summary_text(analyze_table(select_rows(read_npy_table(frequency_fixture("gpt2_wpe_rows0-63.npy")), "1:64"), "1"));
  EXPECT_NE(gpt2.find(" | PC8 "), std::string::npos) << gpt2;  // eight of its 11 components above the floor
  EXPECT_EQ(gpt2.find(" | PC9 "), std::string::npos) << gpt2;
  EXPECT_NE(gpt2.find(")\n                and 3 more components: poslab analyze --json FILE lists them all\n"),
            std::string::npos)
      << gpt2;
}

// A table of rank 2 (one circle, no noise): its other components hold no variance and get no period (their curves
// are rounding's), and the strongest periods are those with power, its circle's alone.
TEST(Frequencies, ComponentsAndFrequenciesWithoutVarianceGetNoPeriod) {
  const std::string text =
      summary_text(analyze_table(planted_waves(64, 8, {{16, 0, 1}, {16, -M_PI / 2, 1}}, 0, 5), "rank 2"));
  EXPECT_NE(text.find("PC1 16.0 ("), std::string::npos) << text;
  EXPECT_NE(text.find("                PC3 onward: no variance (the centred table's rank is 2)\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find(" | PC3 "), std::string::npos) << text;
  EXPECT_NE(text.find("(periods 16.0)\n"), std::string::npos) << text;
}

// What the rules cannot tell from a trained table (docs/analysis.md, "smooth noise"): a random walk along position,
// whose principal components are cosines of rising frequency, reads circles and a helix of most of the variance.
TEST(Frequencies, ARandomWalkReadsAsCirclesAndAHelix) {
  const torch::Tensor walk = test::gaussian({128, 64}, 11).cumsum(0) * 0.02;
  const Analysis a = analyze_table(walk, "random walk");
  EXPECT_GE(a.circles.size(), 2u);
  ASSERT_TRUE(a.helix.has_value());
  EXPECT_GT(a.helix->explained, 0.5);
  EXPECT_GT(a.smooth.adjacent_cosine, 0.9);
}

// The walk control (analysis/baselines.h) is such a walk: each row the last plus a step of N(0, std²) entries, drawn
// as the random control's entries are; the verdict's two rules both hold on it, which is what the control shows.
TEST(Frequencies, TheWalkControlIsTheRandomTablesSteps) {
  const torch::Tensor steps = random_table(96, 16, 0.02, 3), walk = random_walk_table(96, 16, 0.02, 3);
  EXPECT_TRUE(torch::equal(walk[0], steps[0]));
  EXPECT_TRUE(torch::allclose(walk.slice(0, 1) - walk.slice(0, 0, 95), steps.slice(0, 1), 0, 1e-15));
  EXPECT_TRUE(torch::equal(synthetic_table("walk", 96, 16, 3, 0.02), walk));
  const std::vector<Baseline> controls = baseline_analyses(96, 16);
  ASSERT_EQ(controls.size(), 4u);
  EXPECT_EQ(controls[3].name, "walk");
  const Analysis& a = controls[3].analysis;
  EXPECT_TRUE(torch::equal(random_walk_table(96, 16, kBaselineStd, kBaselineSeed),
                           synthetic_table("walk", 96, 16, kBaselineSeed, kBaselineStd)));
  EXPECT_GE(a.noise.signal_share, 0.5) << "low rank by the verdict's rule";
  EXPECT_GE(a.shuffle_control.z, 5.0) << "smooth by the verdict's rule";
  EXPECT_FALSE(a.circles.empty());
}

// The handbook control as docs/analysis.md defines it: per dim j, 0.5·sin(f_j·pos + φ_j), f_j = 0.1 + 0.5·j/d, plus
// 0.2·N(0, 1)·e^(−0.01·pos), all ×1/√d. A sinusoid of frequency f meets x(p + 1) + x(p − 1) = 2 cos f · x(p); past
// position 2000 the noise has faded below 1e-9, so each column meets it with its own f_j and peaks at 0.5/√d. Near
// position 0 what breaks the recurrence is the noise: its sd, rescaled by the fade, is 1.
TEST(Frequencies, TheHandbookControlIsItsDefinition) {
  const int64_t d = 256;
  const torch::Tensor W = handbook_table(2400, d, 0) * std::sqrt(static_cast<double>(d));
  const auto f = 0.1 + 0.5 * torch::arange(d, torch::kFloat64) / static_cast<double>(d);  // (d,)
  auto residual = [&](int64_t p) { return W[p + 1] + W[p - 1] - 2 * torch::cos(f) * W[p]; };
  for (int64_t p : {2000, 2200, 2398}) EXPECT_LT(residual(p).abs().max().item<double>(), 1e-8) << p;
  const double peak = W.slice(0, 2000).abs().max().item<double>();
  EXPECT_NEAR(peak, 0.5, 1e-4);
  double sum2 = 0;
  int64_t n = 0;
  for (int64_t p = 1; p <= 40; ++p) {
    const auto fade = [](int64_t q) { return std::exp(-0.02 * static_cast<double>(q)); };      // (e^(−0.01 q))²
    const auto var = 0.04 * (fade(p + 1) + fade(p - 1) + 4 * torch::cos(f).pow(2) * fade(p));  // (d,)
    sum2 += (residual(p).pow(2) / var).sum().item<double>();
    n += d;
  }
  EXPECT_NEAR(std::sqrt(sum2 / static_cast<double>(n)), 1.0, 0.03) << "the noise's sd and fade";
}

TEST(Frequencies, MatchesNumPy) {
  std::ifstream in(frequency_fixture("periodicity_numpy.json"));
  ASSERT_TRUE(in) << "missing periodicity_numpy.json (scripts/periodicity_numpy.py writes it)";
  const auto j = nlohmann::json::parse(in);
  const std::vector<std::tuple<std::string, std::string, std::string>> tables = {
      {"planted_helix_96x24.npy", ":", "planted_helix_96x24.npy"},
      {"planted_helix_even_96x24.npy", ":", "planted_helix_even_96x24.npy"},
      {"gpt2_wpe_rows0-63.npy", "1:64", "gpt2_wpe_rows0-63.npy[1:64]"},
      {"runs/default_float32_seed1/wpe_step001500.npy", ":", "runs/default_float32_seed1/wpe_step001500.npy"},
      {"runs/circles_rows128_seed1/wpe_step001500.npy", ":", "runs/circles_rows128_seed1/wpe_step001500.npy"}};
  for (const auto& [file, rows, key] : tables) {
    SCOPED_TRACE(key);
    const Analysis a = analyze_table(select_rows(read_npy_table(frequency_fixture(file)), rows), key);
    const auto& e = j["tables"][key];
    ASSERT_FALSE(e.is_null());
    ASSERT_EQ(a.noise.signal_rank, e["signal_rank"].get<int>());
    ASSERT_EQ(a.pc_frequencies.size(), e["components"].size());
    for (size_t k = 0; k < a.pc_frequencies.size(); ++k) {
      const auto& f = a.pc_frequencies[k];
      const auto& n = e["components"][k];
      // NumPy finds the peak on a grid of 1e-4 bin
      EXPECT_NEAR(f.cycles_per_position * a.positions, n["frequency"].get<double>(), 2e-4) << "PC" << f.component;
      EXPECT_NEAR(f.power_share, n["power_share"].get<double>(), 1e-9) << "PC" << f.component;
      EXPECT_NEAR(f.spectral_entropy, n["spectral_entropy"].get<double>(), 1e-9) << "PC" << f.component;
      EXPECT_NEAR(f.slow_share, n["slow_share"].get<double>(), 1e-9) << "PC" << f.component;
      EXPECT_NEAR(f.explained, n["explained"].get<double>(), 1e-9) << "PC" << f.component;
    }
    ASSERT_EQ(a.circles.size(), e["circles"].size());
    for (size_t c = 0; c < a.circles.size(); ++c) {
      const auto& n = e["circles"][c];
      EXPECT_EQ(a.circles[c].first, n["components"][0].get<int>());
      EXPECT_EQ(a.circles[c].second, n["components"][1].get<int>());
      EXPECT_NEAR(a.circles[c].frequency, n["frequency"].get<double>(), 2e-4);
      EXPECT_NEAR(a.circles[c].concentration, n["concentration"].get<double>(), 1e-4);
      EXPECT_NEAR(a.circles[c].circularity, n["circularity"].get<double>(), 1e-4);
      EXPECT_NEAR(a.circles[c].explained, n["explained"].get<double>(), 1e-9);
    }
    ASSERT_EQ(a.helix.has_value(), !e["helix"].is_null());
    if (a.helix) {
      const auto& h = e["helix"];
      EXPECT_EQ(a.helix->slow, h["slow_component"].get<int>());
      EXPECT_NEAR(a.helix->explained, h["explained"].get<double>(), 1e-9);
      ASSERT_EQ(a.helix->rotated, h["rotated"].get<bool>());
      EXPECT_NEAR(a.positions / a.helix->slow_period, a.positions / h["slow_period"].get<double>(), 2e-4);
      if (a.helix->rotated) {  // the circle of the turned axes
        EXPECT_EQ(a.helix->circle.first, h["components"][0].get<int>());
        EXPECT_EQ(a.helix->circle.second, h["components"][1].get<int>());
        EXPECT_NEAR(a.helix->circle.frequency, h["circle"]["frequency"].get<double>(), 2e-4);
        EXPECT_NEAR(a.helix->circle.concentration, h["circle"]["concentration"].get<double>(), 1e-4);
        EXPECT_NEAR(a.helix->circle.circularity, h["circle"]["circularity"].get<double>(), 1e-4);
        EXPECT_NEAR(a.helix->circle.explained, h["circle"]["explained"].get<double>(), 1e-9);
      }
    }
    ASSERT_EQ(a.periodogram.size(), e["periodogram"].size());
    for (size_t k = 0; k < a.periodogram.size(); ++k)
      EXPECT_NEAR(a.periodogram[k], e["periodogram"][k].get<double>(), 1e-9) << "bin " << k + 1;
    EXPECT_EQ(a.strongest_frequencies, e["strongest_frequencies"].get<std::vector<int>>());
    EXPECT_NEAR(a.sinusoid_r2, e["sinusoid_r2"].get<double>(), 1e-8);
    EXPECT_NEAR(a.sinusoid_r2_strongest, e["sinusoid_r2_strongest"].get<double>(), 1e-8);
    EXPECT_NEAR(a.translation_invariance, e["translation_invariance"].get<double>(), 1e-9);
    EXPECT_NEAR(a.monotonicity, e["monotonicity"].get<double>(), 1e-12);
  }
}

}  // namespace
}  // namespace poslab
