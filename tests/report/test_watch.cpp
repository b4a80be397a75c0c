// The watch page's data (report/watch.h) with known answers: which snapshots are kept, the quantised similarity
// and kernels decode to the analysis's values, the path's axes stay fixed across frames; and the page's shell
// (report/watch_page.h, report/html.h). tests/report/test_watch_page.sh opens real pages in Chromium.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/baselines.h"
#include "analysis/trajectory.h"
#include "formats/npy.h"
#include "report/html.h"
#include "report/watch.h"
#include "report/watch_page.h"
#include "run/run_files.h"
#include "test_util.h"
#include "util/error.h"
#include "util/fs.h"

namespace poslab {
namespace {

using test::error_of;
using test::TempDir;

std::vector<uint8_t> unbase64(const std::string& s) {
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> out;
  uint32_t bits = 0;
  int n = 0;
  for (char c : s) {
    if (c == '=') break;
    bits = (bits << 6) | static_cast<uint32_t>(alphabet.find(c));
    if ((n += 6) >= 8) out.push_back(static_cast<uint8_t>((bits >> (n -= 8)) & 0xff));
  }
  return out;
}

std::vector<int16_t> int16s(const std::string& s) {
  const std::vector<uint8_t> b = unbase64(s);
  std::vector<int16_t> out(b.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int16_t>(b[2 * i] | (b[2 * i + 1] << 8));
  return out;
}

void write_table(const std::string& path, const torch::Tensor& W) {
  const auto w = W.to(torch::kFloat32).contiguous();
  write_file_atomic(path, npy_bytes(w.data_ptr<float>(), w.size(0), w.size(1)));
}

// A run folder with a snapshot per table, at steps 0, 100, 200, …
void write_run(const std::string& dir, const std::vector<torch::Tensor>& tables) {
  const RunFolder run(dir);
  make_dirs(run.snapshots());
  for (size_t k = 0; k < tables.size(); ++k) {
    const int64_t step = 100 * static_cast<int64_t>(k);
    write_table(run.snapshot(step), tables[k]);
    append_snapshot_record(run, SnapshotRecord{step, snapshot_file_name(step), run.snapshot(step), 4.0 - k, NAN});
  }
}

TEST(Html, Base64MatchesRfc4648AndEscapingCoversMarkup) {
  auto b64 = [](const std::string& s) { return base64(reinterpret_cast<const uint8_t*>(s.data()), s.size()); };
  EXPECT_EQ(b64(""), "");
  EXPECT_EQ(b64("f"), "Zg==");
  EXPECT_EQ(b64("fo"), "Zm8=");
  EXPECT_EQ(b64("foo"), "Zm9v");
  EXPECT_EQ(b64("foob"), "Zm9vYg==");
  EXPECT_EQ(b64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(b64("foobar"), "Zm9vYmFy");
  const std::vector<uint8_t> all = {0, 255, 128, 7};
  EXPECT_EQ(unbase64(base64(all.data(), all.size())), all);
  EXPECT_EQ(html_escape("<a href=\"x\">&</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;");
}

TEST(Html, AHrefPathKeepsSafeBytesAndEncodesTheRest) {
  EXPECT_EQ(href_path("../runs/a-b_c.1/seed-1/report/index.html"), "../runs/a-b_c.1/seed-1/report/index.html");
  EXPECT_EQ(href_path("my runs/#1?x&y/é.html"), "my%20runs/%231%3Fx%26y/%C3%A9.html");
}

TEST(Html, FillLineReplacesTheMarkersLineAndNamesAMissingOne) {
  std::string page = "<p>\n<!--X-->\n</p>\n";
  fill_line(page, "<!--X-->", "a\nb\n");
  EXPECT_EQ(page, "<p>\na\nb\n</p>\n");
  const std::string msg = error_of([&] { fill_line(page, "<!--X-->", ""); });
  EXPECT_NE(msg.find("no line <!--X-->"), std::string::npos) << msg;
}

TEST(Watch, PickEvenlyKeepsTheFirstAndLast) {
  EXPECT_EQ(pick_evenly(4, 64), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(pick_evenly(1, 64), (std::vector<int64_t>{0}));
  EXPECT_EQ(pick_evenly(0, 64), (std::vector<int64_t>{}));
  EXPECT_EQ(pick_evenly(9, 3), (std::vector<int64_t>{0, 4, 8}));
  EXPECT_EQ(pick_evenly(9, 1), (std::vector<int64_t>{8}));
  const std::vector<int64_t> k = pick_evenly(1000, 64);
  ASSERT_EQ(k.size(), 64u);
  EXPECT_EQ(k.front(), 0);
  EXPECT_EQ(k.back(), 999);
  for (size_t i = 1; i < k.size(); ++i) EXPECT_GT(k[i], k[i - 1]);
}

// Frame f's path decoded: each axis's mean square over the rows (its variance: the rows are centred).
std::vector<double> path_variances(const nlohmann::json& data, size_t f) {
  const double scale = data["path"]["scale"].get<double>();
  const int64_t k = data["path"]["components"].get<int64_t>();
  const std::vector<int16_t> q = int16s(data["frames"][f]["path"].get<std::string>());
  const int64_t n = static_cast<int64_t>(q.size()) / k;
  std::vector<double> var(static_cast<size_t>(k), 0.0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) var[c] += std::pow(q[r * k + c] / 32767.0 * scale, 2) / n;
  return var;
}

TEST(Watch, FramesDecodeToTheTablesAndThePathAxesStayFixed) {
  TempDir dir;
  const int64_t P = 20, d = 8;
  const torch::Tensor last = synthetic_table("sinusoidal", P, d, 0) + 0.05 * random_table(P, d, 1.0, 3);
  // step 0 noise, step 100 half of the last table, step 200 the last table
  write_run(dir.str(), {random_table(P, d, 0.02, 1), 0.5 * last, last});
  const std::vector<TrajectoryPoint> points = analyze_run(dir.str());
  const nlohmann::json data = watch_data(dir.str(), points);

  EXPECT_EQ(data["positions"], P);
  EXPECT_EQ(data["dims"], d);
  EXPECT_TRUE(data["kernels"].is_null());  // this run wrote no layer-0 kernels
  ASSERT_EQ(data["frames"].size(), 3u);
  EXPECT_EQ(data["frames"][2]["step"], 200);
  EXPECT_EQ(data["frames"][1]["train_loss"], 3.0);
  EXPECT_TRUE(data["frames"][1]["val_loss"].is_null());
  EXPECT_EQ(data["path"]["components"], 3);
  EXPECT_EQ(data["path"]["basis_step"], 200);
  EXPECT_FALSE(data.contains("evals"));  // no metrics.jsonl

  // The losses at every evaluation, also between the snapshots (a diverged one null); logged steps are not evals.
  test::write_text(RunFolder(dir.str()).metrics(),
                   "{\"step\": 0, \"train_loss\": 5.0, \"val_loss\": 5.1}\n{\"step\": 10, \"loss\": 4.9}\n"
                   "{\"step\": 50, \"train_loss\": 4.0, \"val_loss\": 4.2}\n{\"step\": 150, \"val_loss\": null}\n");
  EXPECT_EQ(watch_data(dir.str(), points)["evals"],
            nlohmann::json::parse("[[0, 5.0, 5.1], [50, 4.0, 4.2], [150, null, null]]"));

  // the similarity decodes to the analysis's cosine matrix within the quantisation step
  const torch::Tensor cos = cosine_matrix(last.to(torch::kFloat32).to(torch::kFloat64));
  const std::vector<uint8_t> q = unbase64(data["frames"][2]["sim"].get<std::string>());
  ASSERT_EQ(static_cast<int64_t>(q.size()), P * P);
  for (int64_t i = 0; i < P; ++i)
    for (int64_t j = 0; j < P; ++j)
      EXPECT_NEAR(q[i * P + j] / 255.0 * 2 - 1, cos[i][j].item<double>(), 1.0 / 255 + 1e-9) << i << "," << j;

  // the path: the last table on the circle its analysis found and the strongest component outside it, each axis in
  // units of its own sd there (holding those three components' share of the variance), and the half-size table at
  // exactly half: the same axes, no flip
  const Analysis& a = points[2].analysis;
  ASSERT_FALSE(a.circles.empty());
  const int u = a.circles[0].first, v = a.circles[0].second, w = u == 1 ? (v == 2 ? 3 : 2) : 1;
  EXPECT_EQ(data["path"]["axes"],
            (std::vector<std::string>{"PC" + std::to_string(u), "PC" + std::to_string(v), "PC" + std::to_string(w)}));
  EXPECT_TRUE(data["path"]["scaled"].get<bool>());
  const std::vector<double> sd = path_variances(data, 2);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(sd[c], 1.0, 1e-3) << c;
  const std::vector<int16_t> p2 = int16s(data["frames"][2]["path"].get<std::string>());
  const std::vector<int16_t> p1 = int16s(data["frames"][1]["path"].get<std::string>());
  ASSERT_EQ(static_cast<int64_t>(p2.size()), P * 3);
  for (int64_t i = 0; i < P * 3; ++i) EXPECT_NEAR(p1[i], p2[i] / 2.0, 1.0) << i;
  const double held = a.explained_variance[u - 1] + a.explained_variance[v - 1] + a.explained_variance[w - 1];
  EXPECT_NEAR(data["frames"][2]["path_share"].get<double>(), held, 1e-6);
  EXPECT_NEAR(data["frames"][1]["path_share"].get<double>(), held, 1e-6);
  EXPECT_LT(data["frames"][0]["path_share"].get<double>(), 0.6);  // noise holds little of it

  // spectrum, floor and metrics are the analysis's
  EXPECT_EQ(data["frames"][2]["sv"].size(), points[2].analysis.singular_values_centered.size());
  EXPECT_EQ(data["frames"][2]["sv_of"], points[2].analysis.singular_values_centered.size());
  EXPECT_EQ(data["frames"][2]["periodogram_of"], points[2].analysis.periodogram.size());
  EXPECT_DOUBLE_EQ(data["frames"][2]["floor"].get<double>(), points[2].analysis.noise.threshold);
  EXPECT_EQ(data["frames"][2]["signal_rank"], points[2].analysis.noise.signal_rank);
  EXPECT_EQ(data["frames"][2]["metrics"].size(), data["metrics"].size());
  EXPECT_EQ(data["metrics"].back()["key"], "val_loss");
  // the periodogram is the analysis's (P/2 = 10 bins, under the 64 shown), the circle the strongest one or null
  EXPECT_EQ(data["frames"][2]["periodogram"].get<std::vector<double>>(), points[2].analysis.periodogram);
  EXPECT_EQ(data["frames"][2]["circle"].is_null(), points[2].analysis.circles.empty());
  if (!points[2].analysis.circles.empty()) {
    EXPECT_DOUBLE_EQ(data["frames"][2]["circle"]["share"].get<double>(), points[2].analysis.circles[0].explained);
  }
  WatchLimits few;
  few.max_frequencies = 4;
  EXPECT_EQ(watch_data(dir.str(), points, few)["frames"][2]["periodogram"].size(), 4u);

  // at most two frames: the first and the last snapshot
  WatchLimits two;
  two.max_frames = 2;
  two.max_sim_rows = 5;
  const nlohmann::json small = watch_data(dir.str(), points, two);
  ASSERT_EQ(small["frames"].size(), 2u);
  EXPECT_EQ(small["frames"][0]["step"], 0);
  EXPECT_EQ(small["frames"][1]["step"], 200);
  EXPECT_EQ(small["sim"]["positions"], (std::vector<int64_t>{0, 5, 10, 14, 19}));
  EXPECT_EQ(unbase64(small["frames"][1]["sim"].get<std::string>()).size(), 25u);
}

// A table turned into d = 16 dimensions by a random orthogonal matrix: `curves` (P each) on its first axes, a little
// noise on all.
torch::Tensor table_of(const std::vector<std::vector<double>>& curves, int64_t d, uint64_t seed) {
  const int64_t P = static_cast<int64_t>(curves[0].size());
  torch::Tensor W = torch::zeros({P, d}, torch::kFloat64);
  for (size_t c = 0; c < curves.size(); ++c) W.select(1, static_cast<int64_t>(c)).copy_(torch::tensor(curves[c]));
  const torch::Tensor Q = std::get<0>(torch::linalg_qr(random_table(d, d, 1.0, seed)));
  return W.matmul(Q.t()) + 0.01 * random_table(P, d, 1.0, seed + 1);
}

// The rows' radius in the plane of the path's first two axes, at the last frame (in their sd units).
std::vector<double> radii(const nlohmann::json& data) {
  const double scale = data["path"]["scale"].get<double>();
  const int64_t k = data["path"]["components"].get<int64_t>();
  const std::vector<int16_t> q = int16s(data["frames"].back()["path"].get<std::string>());
  std::vector<double> out;
  for (size_t r = 0; r * k < q.size(); ++r)
    out.push_back(std::hypot(q[r * k] / 32767.0 * scale, q[r * k + 1] / 32767.0 * scale));
  return out;
}

// The path is drawn on what the last snapshot's analysis found: a helix's circle and slow axis (the components, or
// the axes turned apart within them), a circle and the strongest component outside it, else the top principal
// directions. A circle's axes in their own sd units put every row at radius √2, however small the circle's share
// beside a ramp.
TEST(Watch, ThePathIsDrawnOnTheHelixOrCircleTheLastSnapshotHolds) {
  const int64_t P = 64, d = 16;
  std::vector<double> ramp(P), cosine(P), sine(P), other(P);
  for (int64_t p = 0; p < P; ++p) {
    ramp[p] = 2.0 * p / (P - 1) - 1;
    cosine[p] = std::cos(2 * M_PI * p / 16);  // 4 turns, variance ½
    sine[p] = std::sin(2 * M_PI * p / 16);
    other[p] = 0.3 * std::cos(2 * M_PI * 7 * p / P);  // a weaker curve at another period
  }
  for (const auto* wave : {&cosine, &sine}) {  // the ramp apart from the circle (a PCA would mix them), variance ½
    const double along = std::inner_product(ramp.begin(), ramp.end(), wave->begin(), 0.0) / (P / 2.0);
    for (int64_t p = 0; p < P; ++p) ramp[p] -= along * (*wave)[p];
  }
  const double ramp_sd = std::sqrt(std::inner_product(ramp.begin(), ramp.end(), ramp.begin(), 0.0) / P);
  for (double& v : ramp) v *= std::sqrt(0.5) / ramp_sd;
  auto scaled = [](std::vector<double> x, double by) {
    for (double& v : x) v *= by;
    return x;
  };
  // ramp, cosine and sine turned by 60° about (1, 1, 1), then scaled 1.1, 1 and 0.9: principal components that each
  // hold some of all three (and directions no longer at right angles: no plane holds the circle alone)
  auto mixed = [&] {
    const double t = M_PI / 3, c = std::cos(t), s = std::sin(t), n = 1 / std::sqrt(3.0);
    const double k[3] = {n, n, n};
    std::vector<std::vector<double>> out(3, std::vector<double>(P, 0.0));
    const std::vector<double>* in[3] = {&ramp, &cosine, &sine};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {  // Rodrigues: R = cI + s[k]ₓ + (1 − c)kkᵀ
        const double cross = (i == j) ? 0 : ((j == (i + 1) % 3) ? -k[3 - i - j] : k[3 - i - j]);
        const double r = (i == j ? c : 0) + s * cross + (1 - c) * k[i] * k[j];
        for (int64_t p = 0; p < P; ++p) out[i][p] += (1.1 - 0.1 * i) * r * (*in[j])[p];
      }
    return out;
  };
  struct Case {
    const char* name;
    torch::Tensor table;
    std::vector<std::string> axes;  // "" where the analysis's own numbering decides
  };
  const std::vector<Case> cases = {
      {"a helix along a ramp of 10 times the circle's variance",
       table_of({scaled(ramp, std::sqrt(10.0)), cosine, sine}, d, 3),
       {}},
      {"a helix whose components come out mixed",
       table_of(mixed(), d, 5),
       {"circle axis 1", "circle axis 2", "slow axis"}},
      {"a circle with a weaker curve beside it", table_of({cosine, sine, other}, d, 7), {"PC1", "PC2", "PC3"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    write_run(dir.str(), {random_table(P, d, 0.02, 1), c.table});
    const std::vector<TrajectoryPoint> points = analyze_run(dir.str());
    const Analysis& a = points.back().analysis;
    const nlohmann::json data = watch_data(dir.str(), points);
    ASSERT_FALSE(a.circles.empty());
    EXPECT_TRUE(data["path"]["scaled"].get<bool>());
    std::vector<std::string> axes = c.axes;
    if (axes.empty()) {
      ASSERT_TRUE(a.helix && !a.helix->rotated);
      axes = {"PC" + std::to_string(a.helix->circle.first), "PC" + std::to_string(a.helix->circle.second),
              "PC" + std::to_string(a.helix->slow)};
      EXPECT_EQ(axes[2], "PC1");  // the ramp, of most of the variance
    } else if (axes[0] == "circle axis 1") {
      ASSERT_TRUE(a.helix && a.helix->rotated) << "the three components of one variance come out mixed";
    }
    EXPECT_EQ(data["path"]["axes"], axes);
    EXPECT_EQ(data["path"]["kind"], a.helix ? (a.helix->rotated ? "turned helix" : "helix") : "circle");
    const nlohmann::json& turned = data["frames"].back()["turned_circle"];  // the periodogram's caption names it first
    if (a.helix && a.helix->rotated) {
      EXPECT_DOUBLE_EQ(turned["period"].get<double>(), a.helix->circle.period);
      EXPECT_DOUBLE_EQ(turned["turns"].get<double>(), a.helix->circle.frequency);
      EXPECT_EQ(turned["components"].get<std::vector<int>>().size(), 3u);
    } else {
      EXPECT_TRUE(turned.is_null());
    }
    EXPECT_EQ(data["path"]["up"], a.helix ? 2 : 1);  // the 3-D view stands a helix's slow axis upright
    EXPECT_NE(data["path"]["what"].get<std::string>().find(a.helix ? "helix" : "circle"), std::string::npos);
    for (double v : path_variances(data, 1)) EXPECT_NEAR(v, 1.0, 1e-3);
    if (a.helix && a.helix->rotated) {  // each axis the analysis's turned curve (here with some of the ramp in it)
      const std::vector<int16_t> q = int16s(data["frames"].back()["path"].get<std::string>());
      for (int r = 0; r < 3; ++r) {
        const std::vector<double>& y = a.helix->curves[static_cast<size_t>(r)];
        double xy = 0, xx = 0, yy = 0;
        for (int64_t p = 0; p < P; ++p) xy += q[p * 3 + r] * y[p], xx += q[p * 3 + r] * q[p * 3 + r], yy += y[p] * y[p];
        EXPECT_NEAR(std::abs(xy) / std::sqrt(xx * yy), 1.0, 1e-6) << r;
      }
    } else {
      for (double r : radii(data)) EXPECT_NEAR(r, std::sqrt(2.0), 0.1);
    }
    // the helix's share among the curves: null at the noise of step 0, the analysis's at the end
    size_t q = 0;
    while (q < data["metrics"].size() && data["metrics"][q]["key"] != "helix_share") ++q;
    ASSERT_LT(q, data["metrics"].size());
    for (size_t m = 0; m + 2 < data["metrics"].size(); ++m)  // only its curve breaks at a step without a value
      EXPECT_EQ(data["metrics"][m]["gaps"], m == q) << data["metrics"][m]["key"];
    EXPECT_TRUE(data["frames"][0]["metrics"][q].is_null());
    if (a.helix) {
      EXPECT_NEAR(data["frames"][1]["metrics"][q].get<double>(), a.helix->explained, 1e-12);
    } else {
      EXPECT_TRUE(data["frames"][1]["metrics"][q].is_null());
    }
    if (a.helix) {  // the slow axis rises along position, away from the first row
      const std::vector<int16_t> q = int16s(data["frames"].back()["path"].get<std::string>());
      std::vector<double> slow;
      for (int64_t p = 0; p < P; ++p) slow.push_back(q[p * 3 + 2]);
      const double ms = std::accumulate(slow.begin(), slow.end(), 0.0) / P, mp = (P - 1) / 2.0;
      double sp = 0, ss = 0, pp = 0;
      for (int64_t p = 0; p < P; ++p)
        sp += (slow[p] - ms) * (p - mp), ss += (slow[p] - ms) * (slow[p] - ms), pp += (p - mp) * (p - mp);
      EXPECT_GT(sp / std::sqrt(ss * pp), 0.9);
    }
  }

  {  // a first row far out on the circle: the frame stops at 3.5 sd, and the row beyond it is named
    std::vector<double> far = cosine;
    far[0] = 12;
    TempDir out;
    write_run(out.str(), {random_table(P, d, 0.02, 1), table_of({scaled(ramp, std::sqrt(10.0)), far, sine}, d, 3)});
    const std::vector<TrajectoryPoint> points = analyze_run(out.str());
    ASSERT_TRUE(points.back().analysis.helix.has_value());
    const nlohmann::json data = watch_data(out.str(), points);
    EXPECT_DOUBLE_EQ(data["path"]["scale"].get<double>(), 3.5);
    EXPECT_EQ(data["frames"][1]["path_outside"], 1);
    EXPECT_EQ(data["frames"][1]["path_outside_rows"], std::vector<int64_t>{0});
    EXPECT_EQ(data["frames"][0]["path_outside"], 0);  // the noise at step 0, within the frame
  }
  {  // a first row far out on the slow axis only: the 2-D view (the circle's plane) holds it, and its caption names
     // no row beyond the frame
    std::vector<double> steep = scaled(ramp, std::sqrt(10.0));
    steep[0] *= 4;
    TempDir out;
    write_run(out.str(), {random_table(P, d, 0.02, 1), table_of({steep, cosine, sine}, d, 3)});
    const std::vector<TrajectoryPoint> points = analyze_run(out.str());
    ASSERT_TRUE(points.back().analysis.helix.has_value());
    const nlohmann::json data = watch_data(out.str(), points);
    ASSERT_EQ(data["path"]["kind"], "helix");
    EXPECT_DOUBLE_EQ(data["path"]["scale"].get<double>(), 3.5);  // the slow axis reaches past the frame
    EXPECT_EQ(data["frames"][1]["path_outside"], 0);
  }

  // No circle: the top principal directions, in the table's own units, variance falling along them.
  TempDir dir;
  write_run(dir.str(), {random_table(P, d, 0.02, 1), table_of({scaled(ramp, 3), ramp, other}, d, 9)});
  const std::vector<TrajectoryPoint> points = analyze_run(dir.str());
  ASSERT_TRUE(points.back().analysis.circles.empty());
  const nlohmann::json data = watch_data(dir.str(), points);
  EXPECT_EQ(data["path"]["axes"], (std::vector<std::string>{"PC1", "PC2", "PC3"}));
  EXPECT_FALSE(data["path"]["scaled"].get<bool>());
  EXPECT_EQ(data["path"]["kind"], "");
  EXPECT_EQ(data["path"]["up"], 1);
  const std::vector<double> var = path_variances(data, 1);
  EXPECT_GT(var[0], var[1]);
  EXPECT_GT(var[1], var[2]);
  EXPECT_NEAR(data["frames"][1]["path_share"].get<double>(), points.back().analysis.cumulative_variance[2], 1e-6);
}

TEST(Watch, KernelsAreAveragedToTheBudgetAndNamedWhenDamaged) {
  TempDir dir;
  const int64_t P = 20, H = 2;
  write_run(dir.str(), {synthetic_table("sinusoidal", P, 8, 0)});
  const RunFolder run(dir.str());
  // two heads that attend to the query itself only: local
  const torch::Tensor eye = torch::eye(P, torch::kFloat64).repeat({H, 1});  // (H·P, P)
  write_table(run.snapshot_kernels(0), eye);
  const nlohmann::json head = {{"kind", "local"},       {"offset_profile", std::vector<double>(P, 0.0)},
                               {"mass_offset0", 1.0},   {"mass_offset1", 0.0},
                               {"offset50", 0},         {"offset90", 0},
                               {"uniform_offset50", 9}, {"decay_length", nullptr}};
  const nlohmann::json geometry = {{"k", 1},
                                   {"principal_angles_degrees", {80.0}},
                                   {"mean_token_variance_ratio", 0.1},
                                   {"mean_token_spectrum_quantile", 0.7},
                                   {"max_abs_cosine", 0.1}};
  nlohmann::json usage = {{"step", 0},
                          {"attention_kernels", {{"heads", {head, head}}}},
                          {"position_token", geometry},
                          {"data_attention", {{"heads", {head, head}}}}};
  usage["data_attention"]["heads"][1]["kind"] = "sink";
  write_file_atomic(run.snapshot_usage(0), usage.dump());
  const std::vector<TrajectoryPoint> points = analyze_run(dir.str());

  const nlohmann::json full = watch_data(dir.str(), points);
  ASSERT_FALSE(full["kernels"].is_null());
  EXPECT_EQ(full["kernels"]["n_head"], H);
  EXPECT_EQ(full["kernels"]["resolution"], P);  // 2 × 20 × 20 bytes fit the default budget
  const std::vector<uint8_t> k = unbase64(full["frames"][0]["kernels"].get<std::string>());
  ASSERT_EQ(static_cast<int64_t>(k.size()), H * P * P);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < P; ++i)
      for (int64_t j = 0; j < P; ++j) EXPECT_EQ(k[(h * P + i) * P + j], i == j ? 255 : 0);
  EXPECT_EQ(full["frames"][0]["kinds"], (std::vector<std::string>{"local", "local"}));
  EXPECT_EQ(full["frames"][0]["text_kinds"], (std::vector<std::string>{"local", "sink"}));
  // no kernel budget: no kernels, the kinds still
  WatchLimits none;
  none.kernel_bytes = 0;
  const nlohmann::json kinds_only = watch_data(dir.str(), points, none);
  EXPECT_TRUE(kinds_only["kernels"].is_null());
  EXPECT_TRUE(kinds_only["frames"][0]["kernels"].is_null());
  EXPECT_EQ(kinds_only["frames"][0]["kinds"], (std::vector<std::string>{"local", "local"}));

  // a budget of 2 × 10 × 10 bytes: 2 × 2 blocks averaged, the diagonal blocks at 0.5, shown as √0.5
  WatchLimits budget;
  budget.kernel_bytes = 200;
  const nlohmann::json pooled = watch_data(dir.str(), points, budget);
  EXPECT_EQ(pooled["kernels"]["resolution"], 10);
  const std::vector<uint8_t> kp = unbase64(pooled["frames"][0]["kernels"].get<std::string>());
  ASSERT_EQ(kp.size(), 200u);
  EXPECT_EQ(kp[0], std::lround(std::sqrt(0.5) * 255));
  EXPECT_EQ(kp[1], 0);

  write_table(run.snapshot_kernels(0), torch::eye(P, torch::kFloat64));  // one head's worth
  const std::string msg = error_of([&] { watch_data(dir.str(), points); });
  EXPECT_NE(msg.find(run.snapshot_kernels(0) + ": shape (20, 20) where (40, 20) was expected"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("delete it"), std::string::npos) << msg;
}

TEST(Watch, EachPathAxisPointsAwayFromTheFirstPositionSoAMirroredTableDrawsTheSamePath) {
  TempDir dir;
  const std::string a = dir / "a", b = dir / "b";
  const int64_t P = 24, d = 8;
  const torch::Tensor last = synthetic_table("sinusoidal", P, d, 0) + 0.05 * random_table(P, d, 1.0, 5);
  write_run(a, {random_table(P, d, 0.02, 1), last});
  write_run(b, {random_table(P, d, 0.02, 2), -last});
  const nlohmann::json da = watch_data(a, analyze_run(a));
  const nlohmann::json db = watch_data(b, analyze_run(b));
  const std::vector<int16_t> pa = int16s(da["frames"][1]["path"].get<std::string>());
  const std::vector<int16_t> pb = int16s(db["frames"][1]["path"].get<std::string>());
  ASSERT_EQ(static_cast<int64_t>(pa.size()), P * 3);
  for (int c = 0; c < 3; ++c) EXPECT_LE(pa[c], 0) << "the first position's coordinate on PC" << c + 1;
  for (size_t k = 0; k < pa.size(); ++k) EXPECT_NEAR(pa[k], pb[k], 1) << k;  // -W: every axis flipped back
}

TEST(Watch, SeedsDataHoldsEachSeedWithSnapshotsInASmallerPage) {
  TempDir dir;
  const std::string one = dir / "seed-7", two = dir / "seed-9", none = dir / "seed-8";
  const int64_t P = 20, d = 8;
  write_run(one, {random_table(P, d, 0.02, 1), synthetic_table("sinusoidal", P, d, 0)});
  write_run(two, {random_table(P, d, 0.02, 2), random_table(P, d, 0.02, 3), synthetic_table("sinusoidal", P, d, 1)});
  const std::vector<TrajectoryPoint> p1 = analyze_run(one), p2 = analyze_run(two), empty;
  const nlohmann::json data = seeds_watch_data(
      "v", {{7, one, &p1, "emerged from step 100"}, {8, none, &empty, ""}, {9, two, &p2, "not formed"}});
  EXPECT_EQ(data["variant"], "v");
  ASSERT_EQ(data["seeds"].size(), 2u);  // the run without snapshots is left out
  EXPECT_EQ(data["seeds"][0]["seed"], 7);
  EXPECT_EQ(data["seeds"][0]["verdict"], "emerged from step 100");
  EXPECT_EQ(data["seeds"][1]["seed"], 9);
  EXPECT_EQ(data["seeds"][1]["data"]["frames"].size(), 3u);
  EXPECT_EQ(data["seeds"][1]["data"]["frames"][2]["step"], 200);
  EXPECT_EQ(data["seeds"][0]["name"], "seed-7");
  EXPECT_EQ(data["seeds"][0]["data"], watch_data(one, p1, seeds_limits()));
  const WatchLimits l = seeds_limits();
  // Cut to the seeds page's limits, a frame keeps the full counts: its panels say "1 … 64 of 128".
  WatchLimits tight = l;
  tight.max_singular_values = 2;
  tight.max_frequencies = 3;
  const nlohmann::json cut = watch_data(one, p1, tight)["frames"][0];
  EXPECT_EQ(cut["sv"].size(), 2u);
  EXPECT_EQ(cut["sv_of"], p1[0].analysis.singular_values_centered.size());
  EXPECT_EQ(cut["periodogram"].size(), 3u);
  EXPECT_EQ(cut["periodogram_of"], p1[0].analysis.periodogram.size());
  // the seeds page cuts each seed's frames to the limits it is given
  const nlohmann::json tight_seeds = seeds_watch_data("v", {{7, one, &p1, ""}}, tight);
  EXPECT_EQ(tight_seeds["seeds"][0]["data"]["frames"][0]["sv"].size(), 2u);
  EXPECT_EQ(tight_seeds["seeds"][0]["data"]["frames"][0]["periodogram"].size(), 3u);
  EXPECT_EQ(l.kernel_bytes, 0);
  EXPECT_LT(l.max_sim_rows, WatchLimits().max_sim_rows);
  EXPECT_LT(l.max_frames, WatchLimits().max_frames);
  const std::string msg = error_of([&] { seeds_watch_data("v", {{8, none, &empty, ""}}); });
  EXPECT_NE(msg.find("seeds page of v: no run has snapshots"), std::string::npos) << msg;
}

TEST(Watch, EverySeedsPathFollowsTheFormAllTheSeedsHold) {
  const int64_t P = 64, d = 16;
  std::vector<double> ramp(P), cosine(P), sine(P), other(P);
  for (int64_t p = 0; p < P; ++p) {
    ramp[p] = 3.0 * (2.0 * p / (P - 1) - 1);
    cosine[p] = std::cos(2 * M_PI * p / 16);
    sine[p] = std::sin(2 * M_PI * p / 16);
    other[p] = 0.3 * std::cos(2 * M_PI * 7 * p / P);
  }
  TempDir dir;
  const std::string helix = dir / "seed-1", circle = dir / "seed-2", none = dir / "seed-3";
  write_run(helix, {random_table(P, d, 0.02, 1), table_of({ramp, cosine, sine}, d, 3)});
  write_run(circle, {random_table(P, d, 0.02, 2), table_of({cosine, sine, other}, d, 7)});
  write_run(none, {random_table(P, d, 0.02, 3), table_of({ramp, other}, d, 9)});
  const std::vector<TrajectoryPoint> ph = analyze_run(helix), pc = analyze_run(circle), pn = analyze_run(none);
  ASSERT_TRUE(ph.back().analysis.helix.has_value());
  ASSERT_FALSE(pc.back().analysis.helix.has_value());
  ASSERT_FALSE(pc.back().analysis.circles.empty());
  ASSERT_TRUE(pn.back().analysis.circles.empty());
  auto axes = [](const nlohmann::json& seed) { return seed["data"]["path"]["axes"].get<std::vector<std::string>>(); };

  // One seed alone is drawn on its own helix, as on its watch page.
  const nlohmann::json alone = seeds_watch_data("v", {{1, helix, &ph, ""}});
  EXPECT_EQ(alone["path_form"], "helix");
  EXPECT_EQ(alone["seeds"][0]["data"], watch_data(helix, ph, seeds_limits()));

  // Beside a seed with a circle only: both on their strongest circle (and the component beside it), in sd units.
  const Analysis& ah = ph.back().analysis;
  const nlohmann::json two = seeds_watch_data("v", {{1, helix, &ph, ""}, {2, circle, &pc, ""}});
  EXPECT_EQ(two["path_form"], "circle");
  EXPECT_EQ(two["seeds"][0]["form"], "helix");
  EXPECT_EQ(two["seeds"][1]["form"], "circle");
  EXPECT_EQ(axes(two["seeds"][0])[0], "PC" + std::to_string(ah.circles[0].first));
  EXPECT_EQ(axes(two["seeds"][0])[1], "PC" + std::to_string(ah.circles[0].second));
  EXPECT_EQ(two["seeds"][0]["data"]["path"]["kind"], "circle");
  EXPECT_EQ(two["seeds"][0]["data"]["path"]["up"], 1);  // no slow axis upright: it is not drawn as a helix
  EXPECT_TRUE(two["seeds"][0]["data"]["path"]["scaled"].get<bool>());
  EXPECT_EQ(two["seeds"][1]["data"], watch_data(circle, pc, seeds_limits()));

  // Beside a seed with neither: every seed on its top principal directions, in the table's units.
  const nlohmann::json three = seeds_watch_data("v", {{1, helix, &ph, ""}, {2, circle, &pc, ""}, {3, none, &pn, ""}});
  EXPECT_EQ(three["path_form"], "principal");
  for (const auto& seed : three["seeds"]) {
    EXPECT_EQ(axes(seed), (std::vector<std::string>{"PC1", "PC2", "PC3"})) << seed["seed"];
    EXPECT_FALSE(seed["data"]["path"]["scaled"].get<bool>()) << seed["seed"];
  }
  EXPECT_EQ(three["seeds"][2]["form"], "principal");
}

TEST(Watch, ASnapshotOfAnotherShapeIsNamed) {
  TempDir dir;
  write_run(dir.str(), {random_table(20, 8, 0.02, 1), random_table(20, 8, 0.02, 2)});
  const std::vector<TrajectoryPoint> points = analyze_run(dir.str());
  write_table(RunFolder(dir.str()).snapshot(100), random_table(16, 8, 0.02, 2));
  const std::string msg = error_of([&] { watch_data(dir.str(), points); });
  EXPECT_NE(msg.find("wpe_step000100.npy: shape (16, 8) differs from the first snapshot's (20, 8)"), std::string::npos)
      << msg;
}

TEST(WatchPage, EmbedsTheDataSafelyAndNeedsAFrame) {
  nlohmann::json data = {{"frames", nlohmann::json::array({{{"step", 0}}})}, {"note", "</script><!-- x"}};
  const std::string page = watch_html("a <run>", "/runs/x&y", data);
  EXPECT_NE(page.find("<title>a &lt;run&gt;: watch the table form</title>"), std::string::npos);
  EXPECT_NE(page.find("/runs/x&amp;y"), std::string::npos);
  // Laid out at a phone's own width, its panels no wider than the screen.
  EXPECT_NE(page.find("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"), std::string::npos);
  EXPECT_NE(page.find("canvas { border: 1px solid #eee; display: block; max-width: 100%;"), std::string::npos);
  EXPECT_NE(page.find("\\u003c/script>\\u003c!-- x"), std::string::npos);
  EXPECT_EQ(page.find("POSLAB_"), std::string::npos) << "a marker of watch_page.html left unfilled";
  size_t closes = 0;
  for (size_t at = page.find("</script>"); at != std::string::npos; at = page.find("</script>", at + 1)) ++closes;
  EXPECT_EQ(closes, 4u);  // the template's four scripts (error counter, data, panels.js, page), none from the data
  const std::string msg = error_of([] { watch_html("t", "s", nlohmann::json{{"frames", nlohmann::json::array()}}); });
  EXPECT_NE(msg.find("no snapshots to show"), std::string::npos);
}

TEST(WatchPage, TheSeedsPageEmbedsItsDataAndNeedsASeedWithFrames) {
  const nlohmann::json seed = {{"seed", 1}, {"data", {{"frames", nlohmann::json::array({{{"step", 0}}})}}}};
  const std::string page = seeds_html("poslab: v<1>", "/c", {{"variant", "v"}, {"seeds", {seed}}});
  EXPECT_NE(page.find("<title>poslab: v&lt;1&gt;: its seeds side by side</title>"), std::string::npos);
  EXPECT_NE(page.find("const Panels ="), std::string::npos);  // panels.js, shared with the watch page
  EXPECT_EQ(page.find("POSLAB_"), std::string::npos) << "a marker of seeds_page.html left unfilled";
  for (const nlohmann::json& bad :
       {nlohmann::json{{"seeds", nlohmann::json::array()}},
        nlohmann::json{{"seeds", {{{"seed", 1}, {"data", {{"frames", nlohmann::json::array()}}}}}}},
        nlohmann::json::array()}) {
    const std::string msg = error_of([&] { seeds_html("t", "s", bad); });
    EXPECT_NE(msg.find("seeds page: no seed with snapshots to show"), std::string::npos) << bad.dump();
  }
}

}  // namespace
}  // namespace poslab
