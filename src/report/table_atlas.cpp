#include "report/table_atlas.h"

#include <spdlog/fmt/fmt.h>

#include <filesystem>

#include "analysis/agreement.h"
#include "analysis/analysis.h"
#include "report/figures.h"
#include "report/html.h"
#include "report/report.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_text.h"

namespace poslab {
namespace fs = std::filesystem;

namespace {

struct PairAgreement {
  size_t a = 0, b = 0;
  int64_t positions = 0;
  Agreement g;
};

std::string agreement_cell(const PairAgreement& p) {
  return fmt::format(
      "<td title=\"{} positions; similarity correlation {:.3f} (shuffled {:.3f} ± {:.3f})\">{:.3f}<br>"
      "<small class=\"null\">{:.3f} ± {:.3f}<br>random {:.3f}</small></td>",
      p.positions, p.g.similarity_correlation, p.g.similarity_shuffled.mean, p.g.similarity_shuffled.sd, p.g.cka,
      p.g.cka_shuffled.mean, p.g.cka_shuffled.sd, p.g.cka_random);
}

}  // namespace

std::string write_table_atlas(const std::vector<NamedTable>& tables, const std::string& out_dir) {
  if (tables.size() < 2) throw Error("compare: give two tables or more", "poslab analyze reads one table");
  make_dirs(out_dir);
  std::vector<Analysis> analyses;
  std::vector<std::string> reports;
  for (size_t i = 0; i < tables.size(); ++i) {
    const NamedTable& t = tables[i];
    analyses.push_back(analyze_table(t.rows, t.source));
    const std::string dir = fmt::format("tables/{}-{}", i + 1, gp_slug(t.label));
    write_table_report(t.rows, t.source, (fs::path(out_dir) / dir).string(), 0, t.grid_rows, t.grid_cols);
    reports.push_back(dir + "/index.html");
  }
  std::vector<PairAgreement> pairs;
  for (size_t a = 0; a < tables.size(); ++a)
    for (size_t b = a + 1; b < tables.size(); ++b) {
      const int64_t P = std::min(tables[a].rows.size(0), tables[b].rows.size(0));
      pairs.push_back({a, b, P,
                       table_agreement(tables[a].rows.slice(0, 0, P), tables[b].rows.slice(0, 0, P), tables[a].label,
                                       tables[b].label)});
    }

  std::vector<Series> series;
  for (size_t i = 0; i < tables.size(); ++i) series.push_back({tables[i].label, &analyses[i]});
  const std::vector<Figure> figures = {spectrum_figure(series), cumulative_variance_figure(series)};

  nlohmann::json j = {{"tables", nlohmann::json::array()}, {"pairs", nlohmann::json::array()}};
  std::string rows;
  for (size_t i = 0; i < tables.size(); ++i) {
    const Analysis& an = analyses[i];
    rows += fmt::format(
        "<tr><td><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{:.0f} %</td><td>{}</td>"
        "<td>{:.3f}</td><td>{:+.1f}</td></tr>\n",
        reports[i], html_escape(tables[i].label), an.positions, an.dims, an.noise.signal_rank,
        100 * an.noise.signal_share, an.k90, an.smooth.adjacent_cosine, an.shuffle_control.z);
    j["tables"].push_back({{"label", tables[i].label},
                           {"source", tables[i].source},
                           {"report", reports[i]},
                           {"positions", an.positions},
                           {"dims", an.dims},
                           {"signal_rank", an.noise.signal_rank},
                           {"signal_share", an.noise.signal_share},
                           {"k90", an.k90},
                           {"adjacent_cosine", an.smooth.adjacent_cosine},
                           {"shuffle_z", an.shuffle_control.z}});
  }
  // Columns by number (the rows name them), so that the matrix stays narrow.
  std::string matrix = "<tr><th></th>";
  for (size_t i = 0; i < tables.size(); ++i)
    matrix += fmt::format("<th title=\"{}\">{}</th>", html_escape(tables[i].label), i + 1);
  matrix += "</tr>\n";
  for (size_t a = 0; a < tables.size(); ++a) {
    matrix += fmt::format("<tr><th>{} {}</th>", a + 1, html_escape(tables[a].label));
    for (size_t b = 0; b < tables.size(); ++b) {
      if (a == b) {
        matrix += "<td>1</td>";
        continue;
      }
      for (const PairAgreement& p : pairs)
        if ((p.a == a && p.b == b) || (p.a == b && p.b == a)) matrix += agreement_cell(p);
    }
    matrix += "</tr>\n";
  }
  for (const PairAgreement& p : pairs) {
    nlohmann::json pj = to_json(p.g);
    pj["positions_compared"] = p.positions;
    j["pairs"].push_back(pj);
  }

  const std::string top =
      "<h2>Tables</h2>\n<div class=\"wide\"><table>\n<tr><th>table (its report)</th><th>positions</th><th>width</th>"
      "<th>above noise</th><th>their share</th><th>k90</th><th>adj cos</th><th>adj z</th></tr>\n" +
      rows +
      "</table></div>\n<p>Above noise: components above the Gavish–Donoho noise floor and their share of the variance; "
      "adj cos: the mean cosine of neighbouring rows; adj z: how many sd of row-shuffled copies it stands above "
      "their mean (docs/analysis.md).</p>\n"
      "<h2>How alike, up to rotation</h2>\n<p>Linear CKA of each pair over the positions both have (any widths), and "
      "below it the same against the column table with its rows shuffled (mean ± sd of 20 copies): the null for "
      "structured tables; then what two independent random tables of these shapes give (high where the widths near "
      "the positions: a CKA is read against both). Hover a cell for the similarity correlation. docs/models.md.</p>\n"
      "<div "
      "class=\"wide\"><table>\n" +
      matrix + "</table></div>\n<h2>Figures</h2>\n";
  write_file_atomic((fs::path(out_dir) / "atlas.json").string(), json_text(j, 2) + "\n");
  draw_figures(out_dir, figures);
  std::string sources;
  for (const auto& t : tables) sources += (sources.empty() ? "" : " · ") + t.source;
  const std::string page = (fs::path(out_dir) / "index.html").string();
  write_file_atomic(page, report_page("poslab compare: position tables", sources, top, figures));
  return page;
}

}  // namespace poslab
