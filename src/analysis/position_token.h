// Where position lives relative to tokens: the position table's top directions against the token embedding's, in
// the one embedding space both are added in. From plain tensors (wte, wpe), never from a model.
//
// Notation: T (V, C) token embeddings, W (P, C) the position table; T_c, W_c column-centred; v_1 … v_k the top right
// singular vectors of W_c (position directions), t_1 … t_C those of T_c (token directions, by falling variance).
// docs/analysis.md, "Position and token subspaces", writes each number out.
#pragma once

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <string>
#include <vector>

namespace poslab {

struct PositionTokenGeometry {
  int64_t vocab = 0, positions = 0, dims = 0;
  int k = 0;                             // position directions compared: the table's signal rank (at least 1)
  std::vector<double> principal_angles;  // degrees, between span(v_1..v_k) and span(t_1..t_k)
  std::vector<double>
      token_variance_ratio;  // per v_i: variance of the token rows along v_i / their mean variance per direction
  std::vector<double> token_spectrum_quantile;  // per v_i: Σ_j (v_i·t_j)² (j − ½)/C ∈ (0, 1); 0 top, 1 bottom, ½ random
  double max_abs_cosine = 0;   // max over token rows a, position rows b of |cos(a, b)| (rows as they are)
  double mean_abs_cosine = 0;  // its mean over all pairs
};

// k = 0 takes the table's signal rank (components above the noise floor, at least 1). Throws poslab::Error when
// the two have different widths.
PositionTokenGeometry position_token_geometry(const torch::Tensor& wte, const torch::Tensor& wpe, int k = 0);

nlohmann::json to_json(const PositionTokenGeometry& g);
std::string position_token_text(const PositionTokenGeometry& g);

}  // namespace poslab
