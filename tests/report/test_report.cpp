#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

#include <spdlog/fmt/fmt.h>

#include "analysis/baselines.h"
#include "formats/npy.h"
#include "report/figures.h"
#include "report/gnuplot.h"
#include "report/report.h"
#include "source_paths.h"
#include "test_util.h"
#include "util/error.h"
#include "util/fs.h"

namespace poslab {
namespace {

using test::TempDir;
using test::write_text;
namespace fs = std::filesystem;

// scripts/setup.sh installs gnuplot: without it these tests fail rather than skip.
constexpr const char* kNeedGnuplot = "gnuplot is not installed: run bash scripts/setup.sh (it installs gnuplot-nox)";

void report_run(const TempDir& dir) {
  std::string index, metrics;
  for (int step = 0; step <= 300; step += 100) {
    // from noise towards a smooth table
    const double a = step / 300.0;
    auto W =
        ((1 - a) * random_table(32, 16, 0.5, step) + a * handbook_table(32, 16, 1)).to(torch::kFloat32).contiguous();
    const std::string name = "wpe_step" + std::to_string(step) + ".npy";
    write_text(dir / ("run/snapshots/" + name), npy_bytes(W.data_ptr<float>(), 32, 16));
    index += "{\"step\":" + std::to_string(step) + ",\"file\":\"" + name + "\"}\n";
    metrics += "{\"step\":" + std::to_string(step) + ",\"loss\":" + std::to_string(4.0 - step / 100.0) +
               ",\"train_loss\":3.5,\"val_loss\":3.6,\"lr\":0.001,\"tokens_per_s\":1000}\n";
  }
  write_text(dir / "run/snapshots/index.jsonl", index);
  write_text(dir / "run/metrics.jsonl", metrics);
  write_text(dir / "run/config.yaml", "model:\n  n_embd: 16\n  block_size: 32\n");
  write_text(dir / "run/eval/per_position_loss_val.csv", "position,loss\n0,5.0\n1,4.0\n2,3.5\n");
}

// Every src= and href= in the page names a file that exists.
void expect_links_exist(const std::string& html_path) {
  const std::string html = read_file(html_path);
  const std::regex ref("(src|href)=\"([^\"]+)\"");
  int n = 0;
  for (std::sregex_iterator it(html.begin(), html.end(), ref), end; it != end; ++it, ++n) {
    const std::string target = (*it)[2];
    EXPECT_EQ(target.find("://"), std::string::npos) << "the page must work offline: " << target;
    EXPECT_TRUE(fs::exists(fs::path(html_path).parent_path() / target)) << target;
  }
  EXPECT_GT(n, 0);
}

void expect_valid_images(const std::string& dir, const std::vector<std::string>& figures) {
  for (const auto& f : figures) {
    const std::string png = read_file(dir + "/" + f + ".png");
    ASSERT_GT(png.size(), 1000u) << f;
    EXPECT_EQ(png.substr(0, 8), "\x89PNG\r\n\x1a\n") << f;
    const std::string svg = read_file(dir + "/" + f + ".svg");
    EXPECT_NE(svg.find("<svg"), std::string::npos) << f;
    EXPECT_NE(svg.find("</svg>"), std::string::npos) << f;
    EXPECT_TRUE(fs::exists(dir + "/" + f + ".gp")) << f;
  }
}

TEST(Report, RunReportHasEveryFigureAndOnlyLiveLinks) {
  ASSERT_FALSE(find_gnuplot().empty()) << kNeedGnuplot;
  TempDir dir;
  report_run(dir);
  const ReportResult r = write_run_report(dir / "run");
  EXPECT_EQ(r.index_html, dir / "run/report/index.html");
  EXPECT_EQ(r.figures,
            (std::vector<std::string>{"spectrum", "cumulative_variance", "similarity", "cos_by_offset", "periodogram",
                                      "principal_components", "helix", "circle", "row_norms", "trajectory",
                                      "position_loss"}));  // the last table, a handbook one, holds a helix
  expect_valid_images(dir / "run/report", r.figures);
  expect_links_exist(r.index_html);
  const std::string html = read_file(r.index_html);
  EXPECT_NE(html.find("<b>Verdict: "), std::string::npos);
  EXPECT_NE(html.find("n_embd: 16"), std::string::npos);  // the run's config
  EXPECT_NE(html.find("handbook, a simulated trained table"), std::string::npos) << "the control columns said";
  // the boundary's outliers counted, their positions named (a position is not a count)
  EXPECT_NE(html.find("<tr><td>boundary outliers (their positions)</td>"), std::string::npos);
  EXPECT_TRUE(std::regex_search(
      html, std::regex("<tr><td>boundary outliers \\(their positions\\)</td>(<td>(none|1 \\(position [0-9]+\\)|"
                       "[2-9] \\(positions [0-9]+(, [0-9]+)+\\))</td>)+</tr>")))
      << html;
  EXPECT_TRUE(fs::exists(dir / "run/report/trajectory.dat"));
  // eval's per-position loss (0,5.0 1,4.0 2,3.5), position by position from 0
  EXPECT_EQ(read_file(dir / "run/report/position_loss.dat"), "# position loss\n0 5\n1 4\n2 3.5\n");
  // the spectrum of the centred tables, with the last snapshot's noise floor and its count above it
  const std::string spectrum_gp = read_file(dir / "run/report/spectrum.gp");
  EXPECT_TRUE(std::regex_search(spectrum_gp, std::regex("title 'noise floor of step 300 \\([0-9]+ above it\\)'")))
      << spectrum_gp;
  // cosine similarity in the watch page's colours (blue −1, white 0, red +1) on [-1, 1]
  const std::string sim_gp = read_file(dir / "run/report/similarity.gp");
  EXPECT_NE(sim_gp.find(kCosinePalette), std::string::npos) << sim_gp;
  EXPECT_NE(sim_gp.find("set cbrange [-1:1]"), std::string::npos) << sim_gp;
  // the colour bars of steps end at the run's last snapshot, not at a round number past it
  for (const char* name : {"cos_by_offset", "periodogram"})
    EXPECT_NE(read_file(dir / "run/report/" + name + ".gp").find("set cbrange [0:300]"), std::string::npos) << name;
}

// The title names the run's folder however the path is written.
TEST(Report, TitleNamesTheRunAlsoThroughDotDotAndATrailingSlash) {
  ASSERT_FALSE(find_gnuplot().empty()) << kNeedGnuplot;
  TempDir dir;
  report_run(dir);
  fs::create_directories(dir / "other");
  for (const std::string& path : {dir / "other/../run", dir / "run/", dir / "run/."}) {
    const std::string html = read_file(write_run_report(path).index_html);
    EXPECT_NE(html.find("<title>poslab report: run</title>"), std::string::npos) << path;
  }
}

// The report's table shows the same baselines as poslab analyze (analysis/baselines.h's, seed 0), whatever the
// run's own seed: the last four columns of a row are random, sinusoidal, handbook and walk.
TEST(Report, BaselinesAreTheOnesAnalyzeShows) {
  ASSERT_FALSE(find_gnuplot().empty()) << kNeedGnuplot;
  TempDir dir;
  report_run(dir);
  write_text(dir / "run/config.yaml", "run:\n  seed: 99\nmodel:\n  n_embd: 16\n  block_size: 32\n");
  const std::string html = read_file(write_run_report(dir / "run").index_html);
  AnalysisOptions opt;
  opt.keep_cosine_matrix = true;
  const std::vector<Baseline> baselines = baseline_analyses(32, 16, opt);
  ASSERT_EQ(baselines.size(), 4u);
  const std::string rank_row = "<tr><td>entropy effective rank</td>";
  const size_t row = html.find(rank_row);
  ASSERT_NE(row, std::string::npos);
  const std::string cells = html.substr(row, html.find("</tr>", row) - row);
  const std::string expected = fmt::format("<td>{:.2f}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.2f}</td>",
                                           baselines[0].analysis.effective_rank, baselines[1].analysis.effective_rank,
                                           baselines[2].analysis.effective_rank, baselines[3].analysis.effective_rank);
  EXPECT_EQ(cells.substr(cells.size() - expected.size()), expected) << cells;
}

TEST(Report, OneTableReport) {
  ASSERT_FALSE(find_gnuplot().empty()) << kNeedGnuplot;
  TempDir dir;
  const ReportResult r = write_table_report(handbook_table(40, 16, 3), "handbook", dir / "one");
  EXPECT_EQ(r.figures.size(), 7u);
  // The probes' reference of knowing nothing: 40 rows all guessed as row 20 (19.5 rounded) miss by 10.00 on average.
  const std::string html = read_file(r.index_html);
  EXPECT_NE(html.find("<tr><td>the middle position 20, for every row</td><td>10.00</td>"), std::string::npos) << html;
  // A page a phone lays out at its own width, each figure a link to its SVG (zoomable there).
  EXPECT_NE(html.find("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"spectrum.svg\"><img src=\"spectrum.png\""), std::string::npos) << html;
  expect_valid_images(dir / "one", r.figures);
  expect_links_exist(r.index_html);
}

// GPT-2's rows 0 and 1 stand far from the rest: the principal components figure, framed at ±3.5 sd, names them.
TEST(Report, ThePrincipalComponentsFigureNamesTheRowsBeyondItsFrame) {
  ASSERT_FALSE(find_gnuplot().empty()) << kNeedGnuplot;
  TempDir dir;
  const NpyArray g = read_npy(poslab::test::source_dir() + "/tests/fixtures/gpt2_wpe_rows0-63.npy");
  const torch::Tensor W = torch::tensor(g.data, torch::kFloat64).view({g.shape[0], g.shape[1]});
  const ReportResult r = write_table_report(W, "gpt2", dir / "gpt2");
  const std::string html = read_file(r.index_html);
  EXPECT_NE(html.find("2 positions (0, 1) beyond 3.5 sd lie outside the frame."), std::string::npos);
  EXPECT_NE(read_file(dir / "gpt2/principal_components.gp").find("set yrange [-3.5<*:*<3.5]"), std::string::npos);
  // the helix's and the circle's paths break at a row beyond the frame (row 1): no line drawn to a point not shown
  for (const char* dat : {"gpt2/pcs_helix.dat", "gpt2/circle.dat"}) {
    const std::string d = read_file(dir / dat);
    EXPECT_NE(d.find("\n\n1 "), std::string::npos) << dat << ":\n" << d.substr(0, 300);
    EXPECT_EQ(d.find("\n\n3 "), std::string::npos) << dat;  // rows 2 and 3 lie inside: joined
  }
}

// A table's rows from 1 (GPT-2's rows 1:64): every figure numbers them as the table does, the heatmap too.
TEST(Report, ASlicedTablesFiguresNumberItsRowsAsTheTableDoes) {
  ASSERT_FALSE(find_gnuplot().empty()) << kNeedGnuplot;
  TempDir dir;
  const NpyArray g = read_npy(poslab::test::source_dir() + "/tests/fixtures/gpt2_wpe_rows0-63.npy");
  const torch::Tensor W = torch::tensor(g.data, torch::kFloat64).view({g.shape[0], g.shape[1]}).narrow(0, 1, 63);
  write_table_report(W, "gpt2", dir / "gpt2", /*row_offset=*/1);
  const std::string gp = read_file(dir / "gpt2/similarity.gp");
  EXPECT_NE(gp.find("set xrange [1-0.5:1+63-0.5]"), std::string::npos) << gp;
  EXPECT_NE(gp.find("matrix using ($1+1):($2+1):3 with image"), std::string::npos) << gp;
  EXPECT_EQ(read_file(dir / "gpt2/norms_table.dat").rfind("# position norm\n1 ", 0), 0u);  // as the other figures
  const std::string watch = read_file(dir / "gpt2/watch.html");
  EXPECT_NE(watch.find("\"path_outside_rows\":[1]"), std::string::npos) << "row 1 of the table, not 0";
  // Both pages name the rows they show, as analyze's summary does.
  EXPECT_NE(read_file(dir / "gpt2/index.html").find("<p class=\"source\">gpt2 (rows 1:64)</p>"), std::string::npos);
  EXPECT_NE(watch.find("gpt2 (rows 1:64)"), std::string::npos);
}

// The helix figure: in 3-D for a table with a helix (the planted ones of tests/fixtures: on its components, and on
// the axes it was turned apart to), in the circle's plane for a circle without a slow axis; each axis in sd units.
// With a helix, its circle seen along the slow axis too, after it.
TEST(Report, AHelixIsDrawnIn3DAndACircleInItsPlane) {
  ASSERT_FALSE(find_gnuplot().empty()) << kNeedGnuplot;
  TempDir dir;
  auto fixture = [](const std::string& name) {
    const NpyArray h = read_npy(poslab::test::source_dir() + "/tests/fixtures/" + name);
    return torch::tensor(h.data, torch::kFloat64).view({h.shape[0], h.shape[1]});
  };
  const ReportResult r = write_table_report(fixture("planted_helix_96x24.npy"), "helix", dir / "helix");
  expect_valid_images(dir / "helix", r.figures);
  EXPECT_NE(read_file(dir / "helix/helix.gp").find("splot"), std::string::npos);
  EXPECT_NE(read_file(dir / "helix/helix.gp").find("set zlabel 'PC1 (sd)'"), std::string::npos);
  // its ramp's period past twice the rows reads "≥", as analyze prints it; a circle coordinate's its own
  const std::string pcs_gp = read_file(dir / "helix/principal_components.gp");
  EXPECT_NE(pcs_gp.find(", period ≥192)'"), std::string::npos) << pcs_gp;
  EXPECT_NE(pcs_gp.find(", period 27."), std::string::npos) << pcs_gp;
  // a circle's coordinates say whose circle they are in, and at the pair's period
  EXPECT_NE(pcs_gp.find("; a circle with PC3, period 27."), std::string::npos) << pcs_gp;
  EXPECT_NE(pcs_gp.find("; a circle with PC2, period 27."), std::string::npos) << pcs_gp;
  // each component in units of its own sd (a circle's coordinates of a few per cent drawn as large as the ramp)
  EXPECT_NE(pcs_gp.find("set ylabel 'projection on the component (sd)'"), std::string::npos) << pcs_gp;
  {
    std::istringstream rows(read_file(dir / "helix/pcs.dat"));
    std::string line;
    std::vector<double> ss(4, 0.0);
    double n = 0;
    while (std::getline(rows, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream cols(line);
      double p = 0, v = 0;
      cols >> p;
      for (double& s2 : ss) cols >> v, s2 += v * v;
      n += 1;
    }
    ASSERT_EQ(n, 96);
    for (double s2 : ss) EXPECT_NEAR(s2 / n, 1.0, 1e-6);
  }
  const auto helix_at = std::find(r.figures.begin(), r.figures.end(), "helix");
  ASSERT_NE(helix_at, r.figures.end());
  ASSERT_NE(helix_at + 1, r.figures.end());
  EXPECT_EQ(*(helix_at + 1), "circle");
  const std::string circle_gp = read_file(dir / "helix/circle.gp");
  EXPECT_NE(circle_gp.find("set xlabel 'PC2 (sd)'\n  set ylabel 'PC3 (sd)'"), std::string::npos) << circle_gp;
  EXPECT_NE(circle_gp.find("set size ratio -1"), std::string::npos);
  // the data in sd units: each column of mean 0 and variance 1, its first row ≤ 0 (as the watch page draws it)
  std::istringstream rows(read_file(dir / "helix/circle.dat"));
  std::string line;
  double sx = 0, sxx = 0, sy = 0, syy = 0, sxy = 0, n = 0;
  while (std::getline(rows, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream cols(line);
    double p = 0, x = 0, y = 0;
    cols >> p >> x >> y;
    if (n == 0) {
      EXPECT_TRUE(x <= 0 && y <= 0) << line;
    }
    EXPECT_EQ(p, n) << "one row a position, in order";
    sx += x, sxx += x * x, sy += y, syy += y * y, sxy += x * y, n += 1;
  }
  EXPECT_EQ(n, 96);
  EXPECT_NEAR(sx / n, 0.0, 1e-6);
  EXPECT_NEAR(sxx / n, 1.0, 1e-6);
  EXPECT_NEAR(sy / n, 0.0, 1e-6);
  EXPECT_NEAR(syy / n, 1.0, 1e-6);
  EXPECT_LT(std::abs(sxy / n), 0.2) << "a circle's two coordinates are uncorrelated (a line's are ±1)";
  EXPECT_NE(read_file(dir / "helix/index.html").find("turns round the centre at one frequency"), std::string::npos);

  const ReportResult t = write_table_report(fixture("planted_helix_even_96x24.npy"), "turned", dir / "turned");
  expect_valid_images(dir / "turned", t.figures);
  const std::string turned = read_file(dir / "turned/helix.gp");
  EXPECT_NE(turned.find("splot"), std::string::npos);
  EXPECT_NE(turned.find("set xlabel 'circle axis 1 (sd)'"), std::string::npos) << turned;
  EXPECT_NE(turned.find("set zlabel 'slow axis (sd)'"), std::string::npos) << turned;
  EXPECT_NE(read_file(dir / "turned/circle.gp").find("set xlabel 'circle axis 1 (sd)'"), std::string::npos);
  EXPECT_NE(read_file(dir / "turned/pcs_helix.dat").find("slow_axis (turned within pc1, pc2, pc3"), std::string::npos);
  EXPECT_NE(read_file(dir / "turned/index.html").find("the space of PC1, PC2 and PC3, turned so that"),
            std::string::npos);

  const auto pos = torch::arange(80, torch::kFloat64) * (2 * M_PI / 10);  // 8 turns of period 10
  const torch::Tensor circle = torch::cat(
      {torch::stack({torch::cos(pos), torch::sin(pos)}, 1), 0.001 * random_table(80, 14, 1.0, 4)}, 1);  // (80, 16)
  const ReportResult c = write_table_report(circle, "circle", dir / "circle");
  expect_valid_images(dir / "circle", c.figures);
  const std::string gp = read_file(dir / "circle/helix.gp");
  EXPECT_EQ(gp.find("splot"), std::string::npos);
  EXPECT_NE(gp.find("set xlabel 'PC1 (sd)'\n  set ylabel 'PC2 (sd)'"), std::string::npos) << gp;
  EXPECT_EQ(std::find(c.figures.begin(), c.figures.end(), "circle"), c.figures.end());  // no helix: the plane is it
  EXPECT_NE(read_file(dir / "circle/index.html").find("turn in quadrature with a period of 10.0"), std::string::npos);
}

TEST(Report, AVisionTablesReportDrawsItsPatchGrid) {
  ASSERT_FALSE(find_gnuplot().empty()) << kNeedGnuplot;
  TempDir dir;
  // A 3 x 4 grid whose rows depend on the grid row only: the split says so on the page.
  const auto f = random_table(3, 8, 1.0, 5);
  const auto W = f.repeat_interleave(4, 0);  // patch (r, c) = f(r)
  const ReportResult r = write_table_report(W, "grid", dir / "grid", 0, 3, 4);
  EXPECT_EQ(r.figures.size(), 9u);
  EXPECT_EQ(r.figures[7], "grid_offsets");
  EXPECT_EQ(r.figures[8], "patch_maps");
  expect_valid_images(dir / "grid", r.figures);
  expect_links_exist(r.index_html);
  const std::string html = read_file(r.index_html);
  EXPECT_NE(html.find("3 × 4 patches. The rows split into a part that depends on the grid row (100.0 %"),
            std::string::npos);
  // One map per patch, each 3 rows of 4.
  const std::string maps = read_file(dir / "grid/patch_maps.dat");
  EXPECT_EQ(std::count(maps.begin(), maps.end(), '\n'), 12 * (3 + 2));
}

TEST(Report, WithoutGnuplotTheDataIsWrittenAndTheErrorIsClear) {
  TempDir dir;
  report_run(dir);
  ::setenv("POSLAB_GNUPLOT", "", 1);
  try {
    write_run_report(dir / "run");
    ::unsetenv("POSLAB_GNUPLOT");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    ::unsetenv("POSLAB_GNUPLOT");
    EXPECT_NE(std::string(e.what()).find("gnuplot not found"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("gnuplot-nox"), std::string::npos) << e.hint();
  }
  EXPECT_TRUE(fs::exists(dir / "run/report/spectrum.gp"));
  EXPECT_TRUE(fs::exists(dir / "run/report/trajectory.dat"));
  EXPECT_FALSE(fs::exists(dir / "run/report/index.html")) << "no page that points at missing figures";
}

TEST(Report, FailingGnuplotScriptIsAnErrorNamingIt) {
  ASSERT_FALSE(find_gnuplot().empty()) << kNeedGnuplot;
  TempDir dir;
  write_text(dir / "bad.gp", "plot 'no-such-file.dat'\n");
  try {
    run_gnuplot(dir.str(), "bad.gp");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.gp: gnuplot failed"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no-such-file.dat"), std::string::npos) << e.what();
  }
  // A folder named relative to where poslab runs (poslab report runs/x): gnuplot's words still reach the error.
  std::filesystem::create_directories(dir / "sub");
  write_text(dir / "sub/bad.gp", "plot 'no-such-file.dat'\n");
  const std::filesystem::path here = std::filesystem::current_path();
  std::filesystem::current_path(dir.str());
  const std::string msg = test::error_of([] { run_gnuplot("sub", "bad.gp"); });
  std::filesystem::current_path(here);
  EXPECT_NE(msg.find("sub/bad.gp: gnuplot failed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no-such-file.dat"), std::string::npos) << msg;
  // gnuplot itself named relative to where poslab runs (POSLAB_GNUPLOT=bin/gp): started from the figures' folder
  // all the same.
  write_text(dir / "bin/gp", "#!/bin/sh\nexec " + find_gnuplot() + " \"$@\"\n");
  std::filesystem::permissions(dir / "bin/gp", std::filesystem::perms::owner_all);
  write_text(dir / "sub/good.gp", "print 1\n");
  std::filesystem::current_path(dir.str());
  {
    test::ScopedEnv gp("POSLAB_GNUPLOT", "bin/gp");
    EXPECT_NO_THROW(run_gnuplot("sub", "good.gp"));
  }
  std::filesystem::current_path(here);
}

// Two labels of one slug ("a b", "a_b") get two data files: neither series' data replaces the other's.
TEST(Report, LabelsOfOneSlugGetDataFilesOfTheirOwn) {
  Figure f;
  f.data[data_file(f, "trajectory_k90", "a b")] = "1";
  f.data[data_file(f, "trajectory_k90", "a_b")] = "2";
  f.data[data_file(f, "trajectory_k90", "a.b")] = "3";
  EXPECT_EQ(f.data, (std::map<std::string, std::string>{{"trajectory_k90_a_b.dat", "1"},
                                                        {"trajectory_k90_a_b_2.dat", "2"},
                                                        {"trajectory_k90_a_b_3.dat", "3"}}));
}

// Values gnuplot would read as one (a constant table's row norms, counts that are all 0) get a y range around them:
// without one gnuplot warns and widens it, to [-1:1] around 0.
TEST(Report, AFlatSeriesGetsAYRangeAroundItsValue) {
  EXPECT_EQ(yrange_if_flat({0, 0, NAN, 0}), "  set yrange [0:1]\n");
  EXPECT_EQ(yrange_if_flat({4, 4.0000000001, 3.9999999999}), "  set yrange [3.6:4.4]\n");
  EXPECT_EQ(yrange_if_flat({-2, -2}), "  set yrange [-2.2:-1.8]\n");
  EXPECT_EQ(yrange_if_flat({1e-9, 1e-9}), "  set yrange [-0.000999999:0.001000001]\n");
  EXPECT_EQ(yrange_if_flat({0, 1}), "");
  EXPECT_EQ(yrange_if_flat({4, 4.001}), "");
  EXPECT_EQ(yrange_if_flat({}), "");
  EXPECT_EQ(yrange_if_flat({NAN}), "");
}

// A report goes into a new or empty folder, or over poslab's own earlier page; a folder of other files only with
// --force, which leaves the files of other names; a file never.
TEST(Report, AReportFolderOfOtherFilesNeedsForce) {
  TempDir dir;
  check_report_folder(dir / "new", "--out", false);
  std::filesystem::create_directories(dir / "empty");
  check_report_folder(dir / "empty", "--out", false);
  test::write_text(dir / "site/index.html", "<html>my page</html>");
  test::write_text(dir / "site/notes.txt", "mine");
  const std::string e = test::error_of([&] { check_report_folder(dir / "site", "--out", false); });
  EXPECT_NE(e.find("--out " + dir / "site" + ": holds 2 files or folders (index.html, notes.txt) and no poslab page"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("--force"), std::string::npos) << e;
  check_report_folder(dir / "site", "--out", true);
  // A page whose drawing failed (gnuplot missing) left its figures' data and scripts: written again; with a file of
  // anyone else's among them, not.
  for (const char* f : {"spectrum.dat", "spectrum.gp", "spectrum.gp.log"})
    test::write_text(dir / (std::string("drawn/") + f), "x");
  check_report_folder(dir / "drawn", "--out", false);
  test::write_text(dir / "drawn/notes.txt", "mine");
  EXPECT_NE(test::error_of([&] { check_report_folder(dir / "drawn", "--out", false); }).find("and no poslab page"),
            std::string::npos);
  const auto W = torch::randn({16, 8}, torch::kFloat64);
  write_table_report(W, "t", dir / "again", 0);
  check_report_folder(dir / "again", "--out", false);  // poslab's own page: written again
  // The other command's page (a comparison's) is no page a report writes over without --force, nor the reverse.
  EXPECT_EQ(test::error_of([&] { check_report_folder(dir / "again", "--out", false, "compare"); }),
            "--out " + dir / "again" +
                ": holds the page of poslab report (index.html), which this compare would replace | name another "
                "folder, or pass --force to write over it (files of the same name are replaced)");
  check_report_folder(dir / "again", "--out", true, "compare");
  test::write_text(dir / "atlas/index.html", "<title>poslab compare: position tables</title>");
  check_report_folder(dir / "atlas", "--out", false, "compare");
  EXPECT_NE(test::error_of([&] {
              check_report_folder(dir / "atlas", "--out", false);
            }).find("holds the page of poslab compare (index.html), which this report would replace"),
            std::string::npos);
  test::write_text(dir / "file", "x");
  EXPECT_NE(test::error_of([&] { check_report_folder(dir / "file", "--out", true); }).find("is a file, not a folder"),
            std::string::npos);
  // A training run's own folders take no page, --force or not; its report/ folder does.
  std::filesystem::create_directories(dir / "run/checkpoints");
  test::write_text(dir / "run/config.yaml", "x");
  for (const char* own : {"run", "run/checkpoints"})
    EXPECT_EQ(test::error_of([&] { check_report_folder(dir / own, "--out", true); }),
              "--out " + dir / own + ": is a folder of the training run in " + dir / "run" +
                  ", which no other command writes into | name a folder outside the run's own record");
  // A file among them is said to be a file, as anywhere.
  test::write_text(dir / "run/checkpoints/latest.pt", "x");
  EXPECT_EQ(test::error_of([&] { check_report_folder(dir / "run/checkpoints/latest.pt", "--out", true, "compare"); }),
            "--out " + dir / "run/checkpoints/latest.pt" +
                ": is a file, not a folder to write a report into | name a "
                "folder");
  // Nor its report/ folder, which poslab report RUN writes: a table's page there would replace the run's.
  EXPECT_EQ(test::error_of([&] { check_report_folder(dir / "run/report", "--out", true); }),
            "--out " + dir / "run/report" + ": is the report folder of the training run in " + dir / "run" +
                ", which poslab report " + dir / "run" + " writes | name a folder outside the run's own record");
  check_report_folder(dir / "run/report-of-a-table", "--out", false);
  // A sweep's folder takes no page either (its comparison goes to SWEEP/compare), its compare/ folder does.
  test::write_text(dir / "sweep/sweep.json", "{}");
  EXPECT_EQ(test::error_of([&] { check_report_folder(dir / "sweep", "--out", true, "compare"); }),
            "--out " + dir / "sweep" +
                ": is the folder of a sweep (it holds sweep.json), which only poslab sweep writes into | name a "
                "folder outside it (a comparison of that sweep alone goes to " +
                dir / "sweep/compare" + ")");
  check_report_folder(dir / "sweep/compare", "--out", false, "compare");
}

// The shift figure's left axis spans 0.1 nats at least (a few thousandths drawn across the panel would look like a
// model leaning on absolute position), and the caption gives the spread; a wide spread keeps gnuplot's own range.
TEST(Report, TheShiftFigureDrawsASmallDifferenceSmall) {
  ShiftCurve c;
  c.shifts = {0, 8, 16};
  c.by_position = {{7.0, 7.0}, {7.003, 7.003}, {7.001, 7.001}};
  c.loss = {7.0, 7.003, 7.001};
  Figure f = shift_loss_figure(c, "val");
  EXPECT_NE(f.script.find("  set yrange [6.9515:7.0515]\n"), std::string::npos) << f.script;
  EXPECT_NE(f.caption.find("The mean losses lie within 0.003 nats of each other (the left axis spans 0.1 nats at "
                           "least)."),
            std::string::npos)
      << f.caption;
  c.loss = {7.0, 7.5, 7.2};
  f = shift_loss_figure(c, "val");
  EXPECT_EQ(f.script.find("set yrange"), std::string::npos) << f.script;
  EXPECT_NE(f.caption.find("within 0.500 nats of each other."), std::string::npos) << f.caption;
}

TEST(Report, HtmlEscape) { EXPECT_EQ(html_escape("a<b> & \"c\""), "a&lt;b&gt; &amp; &quot;c&quot;"); }

}  // namespace
}  // namespace poslab
