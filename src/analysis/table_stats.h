// Basic statistics of a position table W: (P positions, d dims). Pure functions on tensors.
#pragma once

#include <torch/torch.h>

namespace poslab {

// ||w_i||_2 for every row: (P,) float64.
torch::Tensor row_norms(const torch::Tensor& W);

// cos(w_i, w_{i+1}) for i = 0..P-2: (P-1,) float64. Zero rows give cosine 0.
torch::Tensor adjacent_cosines(const torch::Tensor& W);

}  // namespace poslab
