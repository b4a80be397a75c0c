#include "train/snapshot.h"

#include "analysis/snapshot_hook.h"
#include "run/run_files.h"
#include "util/fs.h"
#include "util/npy.h"

namespace poslab {

std::string write_snapshot(const std::string& run_dir, int64_t step, const torch::Tensor& W, double train_loss,
                           double val_loss) {
  const RunFolder run(run_dir);
  make_dirs(run.snapshots());
  auto w = W.detach().to(torch::kCPU, torch::kFloat32).contiguous();  // (block_size, n_embd)
  SnapshotRecord record{step, snapshot_file_name(step), run.snapshot(step), train_loss, val_loss};
  write_file_atomic(record.path, npy_bytes(w.data_ptr<float>(), w.size(0), w.size(1)));
  append_snapshot_record(run, record);
  return analyze_snapshot(w, SnapshotInfo{step, record.path});
}

}  // namespace poslab
