#include "train/snapshot.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/snapshot_hook.h"
#include "util/fs.h"
#include "util/npy.h"

namespace poslab {
namespace fs = std::filesystem;

std::string snapshot_file_name(int64_t step) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "wpe_step%06lld.npy", static_cast<long long>(step));
  return buf;
}

std::string write_snapshot(const std::string& run_dir, int64_t step, const torch::Tensor& W, double train_loss,
                           double val_loss) {
  const fs::path dir = fs::path(run_dir) / "snapshots";
  make_dirs(dir.string());
  auto w = W.detach().to(torch::kCPU, torch::kFloat32).contiguous();  // (block_size, n_embd)
  const std::string name = snapshot_file_name(step);
  write_file_atomic((dir / name).string(), npy_bytes(w.data_ptr<float>(), w.size(0), w.size(1)));
  nlohmann::json line = {{"step", step}, {"file", name}};
  if (std::isfinite(train_loss)) line["train_loss"] = train_loss;
  if (std::isfinite(val_loss)) line["val_loss"] = val_loss;
  append_line((dir / "index.jsonl").string(), line.dump());
  return analyze_snapshot(w, SnapshotInfo{step, (dir / name).string()});
}

void truncate_jsonl_after(const std::string& path, int64_t step) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return;
  std::ifstream in(path);
  std::ostringstream kept;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) continue;  // a line cut short by a crash
    if (j.contains("step") && j["step"].is_number() && j["step"].get<int64_t>() > step) continue;
    kept << line << '\n';
  }
  write_file_atomic(path, kept.str());
}

}  // namespace poslab
