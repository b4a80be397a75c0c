// The run report's section on how the model reads its table: layer 0's position-only attention kernels (a heatmap
// per head, offset profiles, how they formed) and the position/token geometry, at the first and last snapshots.
#pragma once

#include <string>
#include <vector>

#include "analysis/trajectory.h"
#include "report/figures.h"

namespace poslab {

struct UsageSection {
  std::string html;  // empty when the run wrote no model usage (no table, or an older run)
  std::vector<Figure> figures;
};

// From the run's snapshots/model_stepN.json and attn_stepN.npy (run/run_files.h), at the steps of `points`.
UsageSection usage_section(const std::string& run_dir, const std::vector<TrajectoryPoint>& points);

}  // namespace poslab
