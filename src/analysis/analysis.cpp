#include "analysis/analysis.h"

#include <chrono>
#include <cstdlib>
#include <limits>

#include <spdlog/spdlog.h>

#include "analysis/metrics.h"
#include "util/error.h"
#include "util/plural.h"
#include "util/whole_numbers.h"

namespace poslab {

torch::Tensor select_rows(const torch::Tensor& W, const std::string& range, int64_t* first_row) {
  const int64_t P = W.size(0);
  const auto colon = range.find(':');
  const std::string hint = "write --rows BEGIN:END, half-open like a Python slice, e.g. --rows 1:64";
  if (colon == std::string::npos || range.find(':', colon + 1) != std::string::npos)
    throw Error("--rows " + range + ": expected BEGIN:END", hint);
  bool beyond = false;  // a bound past the table's ends: cut to them, as a Python slice is, and said
  auto parse = [&](const std::string& s, int64_t fallback) -> int64_t {
    if (s.empty()) return fallback;
    if (const std::string octal = leading_zero(s); !octal.empty()) throw Error("--rows " + range + ": " + octal, hint);
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (end == s.c_str() || *end != '\0') throw Error("--rows " + range + ": '" + s + "' is not an integer", hint);
    const int64_t i = v < 0 ? P + v : v;
    if (i < 0 || i > P) beyond = true;
    return std::max<int64_t>(0, std::min<int64_t>(P, i));
  };
  const int64_t begin = parse(range.substr(0, colon), 0);
  const int64_t end = parse(range.substr(colon + 1), P);
  if (beyond && end - begin >= 4)
    spdlog::warn("--rows {}: the table has {} rows; rows {}:{} are analysed", range, P, begin, end);
  if (end - begin < 4)
    throw Error("--rows " + range + ": selects " + std::to_string(std::max<int64_t>(0, end - begin)) + " of " +
                    std::to_string(P) + " rows; the analysis needs at least 4",
                hint);
  if (first_row != nullptr) *first_row = begin;
  return W.slice(0, begin, end);
}

int64_t analysis_memory_need(int64_t P, int64_t d) {
  const double bytes = 8.0 * (static_cast<double>(P) * static_cast<double>(P) + 2.0 * static_cast<double>(P) * d);
  return bytes >= 9.0e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(bytes);
}

void check_analysis_fits(int64_t P, int64_t d, const std::string& what, const std::string& hint,
                         const MemoryRoom& room) {
  check_memory_fits(analysis_memory_need(P, d),
                    what + ": its analysis (the similarity of every pair of its " + grouped(P) + " rows alone " +
                        format_bytes(analysis_memory_need(P, 0)) + ")",
                    hint, room);
}

Analysis analyze_table(const torch::Tensor& table, const std::string& source, const AnalysisOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  if (table.dim() != 2)
    throw Error(source + ": the table has " + counted(table.dim(), "dimension") + " " + c10::str(table.sizes()) +
                    ", expected 2 (positions, dims)",
                "pass a 2-D position table");
  if (table.size(0) < 4 || table.size(1) < 1)
    throw Error(
        source + ": the table is " + c10::str(table.sizes()) + "; the analysis needs at least 4 rows and 1 column",
        table.size(0) < 4
            ? "analyse a table of 4 positions or more (a model of model.block_size 4 or more; --rows of 4 rows or more)"
            : "a table of no columns holds nothing to analyse: is this the position table (a .npy of shape "
              "(positions, width))?");
  if (!table.is_floating_point())
    throw Error(source + ": the table's dtype is " + std::string(c10::toString(table.scalar_type())) +
                    ", expected a float type",
                "pass a table of floats (float32, float64, float16 or bfloat16)");
  check_analysis_fits(
      table.size(0), table.size(1),
      source + ": " + grouped(table.size(0)) + " positions x " + std::to_string(table.size(1)) + " dims",
      "analyse part of it: poslab analyze or report with --rows BEGIN:END (e.g. --rows 0:4096) on the "
      "table, or on one snapshot's .npy of a run; or free memory",
      memory_room());
  auto W = table.detach().to(torch::kCPU, torch::kFloat64).contiguous();  // (P, d)
  if (!torch::isfinite(W).all().item<bool>()) {
    auto bad = torch::nonzero(~torch::isfinite(W));
    throw Error(source + ": the table holds " + counted(bad.size(0), "NaN or Inf value") + " (first at row " +
                    std::to_string(bad[0][0].item<int64_t>()) + ", column " +
                    std::to_string(bad[0][1].item<int64_t>()) + ")",
                "the model diverged or the file is damaged: analyse an earlier snapshot of a run, or another copy of "
                "the file");
  }
  // Values past 1e150 overflow the squares the analysis sums (float64 ends near 1.8e308): NaN figures, no error.
  if (const double most = W.abs().max().item<double>(); most > 1e150)
    throw Error(source + ": the table holds values up to " + fmt::format("{:.3g}", most) +
                    ", past what the analysis can square (1e150)",
                "the model diverged or the file is damaged: analyse an earlier snapshot of a run, or another copy of "
                "the file");
  // Values below 1e-70 give fourth powers (the participation ratio's) below what float64 holds: NaN figures, no error.
  if (const double most = W.abs().max().item<double>(); most > 0 && most < 1e-70)
    throw Error(source + ": the table holds values of at most " + fmt::format("{:.3g}", most) +
                    ", below what the analysis can raise to the fourth power (1e-70)",
                "scale the table up (every figure but its row norms is the same at any scale), e.g. in NumPy: "
                "np.save(\"scaled.npy\", (t / abs(t).max()).astype(\"float32\"))");
  Analysis a;
  a.source = source;
  a.positions = W.size(0);
  a.dims = W.size(1);
  a.row_offset = opt.row_offset;
  const torch::Tensor dirs = metrics::spectrum(W, a);
  metrics::similarity(W, opt, a);
  metrics::boundary(W, opt, a);
  metrics::heavy_rows(W, a);
  metrics::sinusoid(W, dirs, opt, a);
  metrics::interpolation(W, opt, a);
  a.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return a;
}

}  // namespace poslab
