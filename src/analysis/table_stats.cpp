#include "analysis/table_stats.h"

namespace poslab {

torch::Tensor row_norms(const torch::Tensor& W) {
  TORCH_CHECK(W.dim() == 2, "row_norms: expected a 2-D table (positions, dims), got ", W.dim(), " dims");
  return W.detach().to(torch::kCPU, torch::kFloat64).norm(2, /*dim=*/1);
}

torch::Tensor adjacent_cosines(const torch::Tensor& W) {
  TORCH_CHECK(W.dim() == 2 && W.size(0) >= 2, "adjacent_cosines: expected (P >= 2, d), got ", W.sizes());
  auto w = W.detach().to(torch::kCPU, torch::kFloat64);
  auto n = w.norm(2, 1).clamp_min(1e-300);                     // (P,)
  auto dots = (w.slice(0, 0, -1) * w.slice(0, 1)).sum(1);      // (P-1,)
  return dots / (n.slice(0, 0, -1) * n.slice(0, 1));
}

}  // namespace poslab
