// poslab compare on tables: several tables of different widths and lengths on one page, every pair's agreement
// the same as analyze --against's, each table's report linked.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <regex>

#include <spdlog/fmt/fmt.h>

#include "analysis/agreement.h"
#include "analysis/baselines.h"
#include "report/gnuplot.h"
#include "report/table_atlas.h"
#include "test_util.h"
#include "util/error.h"
#include "util/fs.h"

namespace poslab {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

TEST(TableAtlas, PairsOfAnyWidthOnThePositionsTheyShare) {
  ASSERT_FALSE(find_gnuplot().empty()) << "gnuplot is not installed: run bash scripts/setup.sh";
  TempDir dir;
  const auto smooth = handbook_table(48, 16, 1);
  const auto wide = handbook_table(48, 24, 2);
  const auto longer = handbook_table(64, 8, 3);
  const std::vector<NamedTable> tables = {
      {"smooth", "a.npy", smooth}, {"wide one", "b.npy", wide}, {"longer", "c.npy", longer}};
  const std::string page = write_table_atlas(tables, dir / "atlas");
  const auto j = nlohmann::json::parse(read_file(dir / "atlas/atlas.json"));
  ASSERT_EQ(j["tables"].size(), 3u);
  ASSERT_EQ(j["pairs"].size(), 3u);
  // Pair (smooth, longer): the first 48 positions of both, as analyze --against --rows 0:48 computes it.
  const Agreement g = table_agreement(smooth, longer.slice(0, 0, 48), "smooth", "longer");
  const auto& p = j["pairs"][1];
  EXPECT_EQ(p["a"], "smooth");
  EXPECT_EQ(p["b"], "longer");
  EXPECT_EQ(p["positions_compared"], 48);
  EXPECT_DOUBLE_EQ(p["cka"].get<double>(), g.cka);
  EXPECT_DOUBLE_EQ(p["shuffled"]["cka"]["mean"].get<double>(), g.cka_shuffled.mean);
  // Each table's report exists and is linked; the spectra share one figure.
  const std::string html = read_file(page);
  for (int i = 1; i <= 3; ++i) {
    const std::string report = j["tables"][i - 1]["report"].get<std::string>();
    EXPECT_TRUE(fs::exists(fs::path(dir / "atlas") / report)) << report;
    EXPECT_NE(html.find("href=\"" + report + "\""), std::string::npos);
  }
  EXPECT_TRUE(fs::exists(dir / "atlas/spectrum.png"));
  EXPECT_NE(read_file(dir / "atlas/spectrum.gp").find("title 'wide one' noenhanced"), std::string::npos);
  EXPECT_NE(html.find(fmt::format("{:.3f}", g.cka)), std::string::npos);
  // beside both nulls: the shuffled copies' and two independent random tables'
  EXPECT_NE(
      html.find(fmt::format("{:.3f} ± {:.3f}<br>random {:.3f}", g.cka_shuffled.mean, g.cka_shuffled.sd, g.cka_random)),
      std::string::npos);
}

TEST(TableAtlas, OneTableIsNotAComparison) {
  TempDir dir;
  const std::string msg = test::error_of([&] {
    write_table_atlas({{"a", "a.npy", handbook_table(8, 4, 1)}}, dir / "x");
  });
  EXPECT_NE(msg.find("give two tables or more"), std::string::npos) << msg;
}

}  // namespace
}  // namespace poslab
