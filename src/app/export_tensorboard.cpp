#include "app/export_tensorboard.h"

#include <spdlog/fmt/fmt.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <filesystem>

#include "analysis/metric_list.h"
#include "analysis/table_io.h"
#include "analysis/trajectory.h"
#include "run/run_files.h"
#include "run/run_folder.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/tfevents.h"

namespace poslab {
namespace fs = std::filesystem;

namespace {

// A table as the projector's TSV: one row per line, values separated by tabs.
std::string table_tsv(const torch::Tensor& W) {
  const auto w = W.to(torch::kFloat64).contiguous();
  const auto a = w.accessor<double, 2>();
  std::string s;
  for (int64_t i = 0; i < w.size(0); ++i) {
    for (int64_t j = 0; j < w.size(1); ++j) s += fmt::format("{}{:.6g}", j ? "\t" : "", a[i][j]);
    s += "\n";
  }
  return s;
}

}  // namespace

TensorboardExport export_tensorboard(const std::string& run_dir, const std::string& dir) {
  const RunFolder run(run_dir);
  const std::vector<MetricsRecord> metrics = read_metrics(run.metrics());
  const std::vector<TrajectoryPoint> points = analyze_run(run_dir);
  TensorboardExport r;
  r.dir = dir;
  make_dirs(dir);
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string events = tf_record(tf_file_version_event(now));
  auto scalar = [&](int64_t step, const std::string& tag, double v) {
    if (!std::isfinite(v)) return;
    events += tf_record(tf_scalar_event(now, step, tag, static_cast<float>(v)));
    ++r.scalars;
  };
  for (const MetricsRecord& m : metrics) {
    scalar(m.step, "loss/batch", m.loss);
    scalar(m.step, "loss/train", m.train_loss);
    scalar(m.step, "loss/val", m.val_loss);
    scalar(m.step, "lr", m.lr);
    scalar(m.step, "tokens_per_s", m.tokens_per_s);
  }
  for (const TrajectoryPoint& p : points)
    for (const Metric& m : scalar_metrics())
      if (m.headline) scalar(p.step, std::string("table/") + m.key, m.value(p.analysis));
  r.events_file = (fs::path(dir) / "events.out.tfevents.poslab").string();
  write_file_atomic(r.events_file, events);

  // The projector: every snapshot's rows, labelled by position.
  std::string config, positions;
  int64_t rows = 0;
  for (const SnapshotRecord& s : read_snapshot_index(run)) {
    const torch::Tensor W = read_npy_table(s.path);
    rows = W.size(0);
    const std::string file = fmt::format("wpe_step{:06d}.tsv", s.step);
    write_file_atomic((fs::path(dir) / file).string(), table_tsv(W));
    config += fmt::format("embeddings {{\n  tensor_name: \"wpe step {}\"\n  tensor_path: \"{}\"\n"
                          "  metadata_path: \"positions.tsv\"\n}}\n", s.step, file);
    ++r.snapshots;
  }
  for (int64_t i = 0; i < rows; ++i) positions += std::to_string(i) + "\n";
  write_file_atomic((fs::path(dir) / "positions.tsv").string(), positions);
  write_file_atomic((fs::path(dir) / "projector_config.pbtxt").string(), config);
  return r;
}

}  // namespace poslab
