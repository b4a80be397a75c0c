// The one list of the analysis's scalar metrics: their key, their label and how they print. It feeds the full
// JSON of an analysis, trajectory.csv / trajectory.json, the console tables of `poslab analyze` and the
// report's table, so a new metric is added here and nowhere else.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace poslab {

struct Metric {
  const char* key;     // JSON key and CSV column: "effective_rank"
  const char* label;   // for people: "entropy effective rank"
  const char* column;  // a narrow column header (at most 9 characters): "eff rank"
  const char* format;  // fmt spec of the value: "{:.2f}"
  bool headline;       // shown in the comparison tables and the per-step console table
  bool integer;        // a count (k90): an integer in JSON
  double (*value)(const Analysis&);
  // A headline metric's console table in `poslab analyze RUN_DIR` (those of one group print together): "spectrum",
  // "order" or "form".
  const char* group = "";
};

const std::vector<Metric>& scalar_metrics();

// The headline metrics only, in list order.
std::vector<Metric> headline_metrics();

// The value printed with the metric's format ("12", "0.613"); "-" when it is not finite.
std::string format_metric(const Metric& m, const Analysis& a);

// The value for JSON: an integer for counts, null when it is not finite.
nlohmann::json metric_json(const Metric& m, const Analysis& a);

}  // namespace poslab
