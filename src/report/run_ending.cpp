#include "report/run_ending.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "analysis/attention_kernels.h"
#include "run/run_files.h"
#include "run/run_folder.h"
#include "util/error.h"

namespace poslab {
namespace fs = std::filesystem;
namespace {

// One headline number across the run: "label  a → b → c" at the quoted snapshots, and its sparkline over all of them
// (empty without Unicode or with two snapshots or fewer).
struct Headline {
  std::string text, spark;
};
Headline headline(const std::string& label, const std::vector<TrajectoryPoint>& points, const std::vector<size_t>& at,
                  double (*value)(const Analysis&), const char* format, bool unicode, double lo, double hi) {
  Headline h{fmt::format("  {:<34}", label), ""};
  for (size_t i = 0; i < at.size(); ++i)
    h.text += (i ? (unicode ? " → " : " -> ") : "") + fmt::format(fmt::runtime(format), value(points[at[i]].analysis));
  if (unicode && points.size() > 2) {
    std::vector<double> values;
    for (const auto& p : points) values.push_back(value(p.analysis));
    h.spark = sparkline(values, lo, hi);
  }
  return h;
}

// Display width of UTF-8 text (each code point one column: the arrows and bars here are).
size_t columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

double signal_rank(const Analysis& a) { return a.noise.signal_rank; }
double signal_share(const Analysis& a) { return 100 * a.noise.signal_share; }
double order_z(const Analysis& a) { return a.shuffle_control.z; }

}  // namespace

std::string sparkline(const std::vector<double>& values, double lo, double hi) {
  static const char* const kBars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  std::string out;
  for (double v : values) {
    const double t = hi > lo && std::isfinite(v) ? std::clamp((v - lo) / (hi - lo), 0.0, 1.0) : 0.0;
    out += kBars[std::min(7, static_cast<int>(std::lround(t * 7)))];
  }
  return out;
}

bool terminal_takes_unicode() {
  for (const char* name : {"LC_ALL", "LC_CTYPE", "LANG"}) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    std::string s(v);
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s.find("utf-8") != std::string::npos || s.find("utf8") != std::string::npos;
  }
  return false;
}

std::string run_ending_text(const std::string& run_dir, const std::vector<TrajectoryPoint>& points, const Verdict& v,
                            bool unicode) {
  if (points.empty()) return "";
  std::string out = fmt::format("\n{}: {}\n", run_dir, snapshot_span(points));
  out += fmt::format("verdict ({}): {}\n", outcome_name(v.outcome), v.summary);
  // The snapshots to quote: the first, the one the structure is there from (when it came later), the last.
  std::vector<size_t> at = {0};
  const std::optional<int64_t> from = v.emerged_from ? v.emerged_from : v.present_from;
  for (size_t i = 1; from && i + 1 < points.size(); ++i)
    if (points[i].step == *from) at.push_back(i);
  if (points.size() > 1) at.push_back(points.size() - 1);
  std::string steps;
  for (size_t k = 0; k < at.size(); ++k)
    steps += (k == 0               ? ""
              : k + 1 == at.size() ? " and "
                                   : ", ") +
             std::to_string(points[at[k]].step) +
             (at.size() == 3 && k == 1 ? (v.emerged_from ? " (emergence)" : " (present from)") : "");
  out += "  at steps " + steps + ":\n";
  double max_rank = 1, max_z = 1, min_z = 0;
  for (const auto& p : points) {
    max_rank = std::max(max_rank, signal_rank(p.analysis));
    max_z = std::max(max_z, order_z(p.analysis));
    min_z = std::min(min_z, order_z(p.analysis));
  }
  const std::vector<Headline> lines = {
      headline("components above the noise floor", points, at, signal_rank, "{:.0f}", unicode, 0, max_rank),
      headline("their share of the variance", points, at, signal_share, "{:.0f} %", unicode, 0, 100),
      headline("adjacent cosine, z over shuffled", points, at, order_z, "{:.1f}", unicode, min_z, max_z)};
  size_t width = 0;
  for (const Headline& h : lines) width = std::max(width, columns(h.text));
  for (const Headline& h : lines)
    out += h.spark.empty() ? h.text + "\n" : h.text + std::string(width - columns(h.text) + 3, ' ') + h.spark + "\n";
  const RunFolder run(run_dir);
  if (const auto usage = read_snapshot_usage(run, points.back().step)) {
    const std::string kinds = head_kinds_words(*usage);
    if (!kinds.empty()) out += fmt::format("layer-0 heads at step {}: {}\n", points.back().step, kinds);
  }
  std::error_code ec;
  const fs::path report = fs::path(run.report_dir()) / "index.html", watch = fs::path(run.report_dir()) / "watch.html";
  if (fs::exists(report, ec)) out += "report: " + report.string() + "\n";
  if (fs::exists(watch, ec)) out += "watch:  " + watch.string() + "\n";
  return out;
}

std::string run_ending_of(const std::string& run_dir) {
  try {
    if (!RunFolder(run_dir).has_snapshots()) return "";
    const std::vector<TrajectoryPoint> points = analyze_run(run_dir);
    return run_ending_text(run_dir, points, judge(points), terminal_takes_unicode());
  } catch (const Error& e) {
    spdlog::warn("the run's verdict could not be read: {}", e.what());
    return "";
  }
}

}  // namespace poslab
