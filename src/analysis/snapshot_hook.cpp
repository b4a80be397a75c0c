#include "analysis/snapshot_hook.h"

#include "analysis/analysis.h"
#include "analysis/format.h"
#include "run/run_folder.h"
#include "util/fs.h"
#include "util/json_text.h"

namespace poslab {

std::string analyze_snapshot(const torch::Tensor& W, const SnapshotInfo& info, std::optional<Analysis>* out) {
  Analysis a;
  try {
    a = analyze_table(W, info.npy_path.empty() ? "wpe" : info.npy_path);
  } catch (const std::exception& e) {  // the analysis's own failure; a file that cannot be written throws below
    return std::string("analysis failed: ") + e.what();
  }
  if (out) *out = a;
  if (!info.npy_path.empty()) {
    nlohmann::json j = to_json(a);
    j["step"] = info.step;
    write_file_atomic(snapshot_analysis_path(info.npy_path), json_text(j));
  }
  return one_line(a);
}

}  // namespace poslab
