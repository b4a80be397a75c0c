// An Analysis as JSON (every metric) and as a readable summary.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

#include "analysis/analysis.h"

namespace poslab {

// Keys: positions, dims, singular_values, explained_variance, k50..k99, k90_uncentered, effective_rank,
// roy_vetterli_rank, participation_ratio, stable_rank, adjacent_cosine, cos_by_offset, first_difference_energy,
// second_difference_energy, shuffled, row_norms, boundary_outliers, pc_frequencies, sinusoid_r2, and more.
nlohmann::json to_json(const Analysis& a);

// One line for logs: "k90 12 | eff rank 20.1 | adjacent cos 0.61 (shuffled 0.02)".
std::string one_line(const Analysis& a);

// Several lines for a terminal: the headline metrics and the named outliers.
std::string summary_text(const Analysis& a);

// A table of the headline metrics side by side, one column per (name, analysis), within `width` columns where it
// can: each metric named by its label where the labels fit, else by its column name ("sig share").
std::string comparison_table(const std::vector<std::pair<std::string, const Analysis*>>& columns, size_t width = 80);

}  // namespace poslab
