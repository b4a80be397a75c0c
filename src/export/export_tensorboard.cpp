#include "export/export_tensorboard.h"

#include <torch/torch.h>

#include <cmath>
#include <filesystem>

#include "analysis/metric_list.h"
#include "analysis/table_io.h"
#include "analysis/trajectory.h"
#include "formats/tfevents.h"
#include "run/run_files.h"
#include "run/run_folder.h"
#include "run/tensorboard_files.h"
#include "util/error.h"
#include "util/fs.h"

namespace poslab {
namespace fs = std::filesystem;

TensorboardExport export_tensorboard(const std::string& run_dir, const std::string& dir) {
  const RunFolder run(run_dir);
  const std::vector<MetricsRecord> metrics = read_metrics(run.metrics());
  // A run without a position table to snapshot (model.position: none) has its curves alone.
  const bool tables = run.has_snapshots();
  const std::vector<TrajectoryPoint> points = tables ? analyze_run(run_dir) : std::vector<TrajectoryPoint>{};
  TensorboardExport r;
  r.dir = dir;
  make_dirs(dir);
  const double now = tf_wall_time();
  std::vector<TbScalar> scalars;
  for (const MetricsRecord& m : metrics) {
    const std::vector<TbScalar> s = metrics_scalars(m);
    scalars.insert(scalars.end(), s.begin(), s.end());
  }
  for (const TrajectoryPoint& p : points)
    for (const Metric& m : headline_metrics())
      if (std::isfinite(m.value(p.analysis))) scalars.push_back({p.step, table_tag(m.key), m.value(p.analysis)});
  r.scalars = static_cast<int>(scalars.size());
  r.events_file = (fs::path(dir) / "events.out.tfevents.poslab").string();
  write_file_atomic(r.events_file, tf_record(tf_file_version_event(now)) + scalar_events(scalars, now));

  // The projector: every snapshot's rows, labelled by position.
  if (!tables) return r;
  std::vector<int64_t> steps;
  int64_t rows = 0;
  for (const SnapshotRecord& s : read_snapshot_index(run)) {
    const torch::Tensor W = read_npy_table(s.path).to(torch::kFloat32).contiguous();
    rows = W.size(0);
    write_file_atomic((fs::path(dir) / projector_table_file(s.step)).string(),
                      projector_tsv(W.data_ptr<float>(), W.size(0), W.size(1)));
    steps.push_back(s.step);
    ++r.snapshots;
  }
  write_file_atomic((fs::path(dir) / "positions.tsv").string(), projector_positions(rows));
  write_file_atomic((fs::path(dir) / "projector_config.pbtxt").string(), projector_config(steps));
  return r;
}

}  // namespace poslab
