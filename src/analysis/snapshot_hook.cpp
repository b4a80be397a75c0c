#include "analysis/snapshot_hook.h"

#include <spdlog/fmt/fmt.h>

#include "analysis/table_stats.h"

namespace poslab {

std::string analyze_snapshot(const torch::Tensor& W, const SnapshotInfo& info) {
  const double norm = row_norms(W).mean().item<double>();
  const double adj = adjacent_cosines(W).mean().item<double>();
  return fmt::format("mean row norm {:.4f} | adjacent cosine {:.4f}", norm, adj);
}

}  // namespace poslab
