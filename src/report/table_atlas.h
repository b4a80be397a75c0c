// poslab compare on tables: the position tables of several models (or files) side by side on one page, whatever
// their widths: each table's headline numbers, the spectra on one axis, and how alike every pair is up to rotation
// (CKA, similarity correlation, beside B's rows shuffled) over the positions they share; each table's own report
// linked.
#pragma once

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace poslab {

struct NamedTable {
  std::string label;                     // short: "bart encoder", "wpe_step001500"
  std::string source;                    // where it came from
  torch::Tensor rows;                    // (P, d), rows mapped to positions
  int64_t grid_rows = 0, grid_cols = 0;  // a vision table's patch grid
};

// Writes OUT/index.html, OUT/atlas.json and each table's report in OUT/tables/N-LABEL/; returns the page's path.
// Pairs of tables with different numbers of positions are compared on the first positions of both. Throws
// poslab::Error for fewer than two tables; without gnuplot, after writing the data, scripts and JSON.
std::string write_table_atlas(const std::vector<NamedTable>& tables, const std::string& out_dir);

}  // namespace poslab
