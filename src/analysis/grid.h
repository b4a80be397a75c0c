// A vision model's position table as the 2-D grid of image patches it encodes: W (R·C, d), patch (r, c) in row
// r·C + c (the class-token rows already left out, hf/families.h). A 1-D analysis reads patch (r, C−1) and (r+1, 0)
// as neighbours; this one measures similarity by (Δrow, Δcol) and how far the table splits into a part that
// depends on the row and a part that depends on the column. docs/models.md, "2-D position grids".
#pragma once

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace poslab {

struct GridAnalysis {
  int64_t rows = 0, cols = 0, dims = 0;
  // Mean cosine similarity of the patch pairs (r, c), (r + Δr, c + Δc): (2R − 1, 2C − 1), entry [Δr + R − 1][Δc + C −
  // 1].
  torch::Tensor similarity_by_offset;
  // The two-way split of the centred rows: W_rc − w̄ = a_r + b_c + e_rc (a_r the mean of grid row r minus w̄, b_c of
  // column c). Shares of Σ‖W_rc − w̄‖² held by the row part (C Σ‖a_r‖²), the column part (R Σ‖b_c‖²) and the rest.
  double row_share = 0, col_share = 0, interaction_share = 0;
  // The same split of row-shuffled copies (mean over them): what it gives when the patches carry no grid order
  // (about (R − 1)/(RC − 1) and (C − 1)/(RC − 1)).
  int shuffle_copies = 0;
  double shuffled_row_share = 0, shuffled_col_share = 0;
  // Mean cosine of horizontally adjacent patches (same row), of vertically adjacent ones, and of any two patches.
  double horizontal_cosine = 0, vertical_cosine = 0, mean_cosine = 0;
  torch::Tensor cosine;  // (RC, RC): each patch's cosine to every other (the small maps of the figure)
};

// Throws poslab::Error when W does not have rows · cols rows or the grid is smaller than 2 × 2.
GridAnalysis grid_analysis(const torch::Tensor& W, int64_t rows, int64_t cols, uint64_t seed = 1234, int copies = 20);

// Every number but the (RC, RC) matrix; similarity_by_offset as nested lists.
nlohmann::json to_json(const GridAnalysis& g);
std::string grid_text(const GridAnalysis& g);

}  // namespace poslab
