#include "analysis/snapshot_hook.h"

#include "analysis/analysis.h"
#include "analysis/format.h"
#include "run/run_folder.h"
#include "util/fs.h"

namespace poslab {

std::string analyze_snapshot(const torch::Tensor& W, const SnapshotInfo& info, std::optional<Analysis>* out) {
  const Analysis a = analyze_table(W, info.npy_path.empty() ? "wpe" : info.npy_path);
  if (out) *out = a;
  if (!info.npy_path.empty()) {
    nlohmann::json j = to_json(a);
    j["step"] = info.step;
    write_file_atomic(snapshot_analysis_path(info.npy_path), j.dump());
  }
  return one_line(a);
}

}  // namespace poslab
