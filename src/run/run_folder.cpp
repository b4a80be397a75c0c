#include "run/run_folder.h"
#include "util/text.h"

#include <cstdio>
#include <filesystem>

namespace poslab {
namespace fs = std::filesystem;

namespace {

const char* const kSeedPrefix = "seed-";

// "runs/default/", "runs/x/../default" and "runs/default" name the same folder.
fs::path normal(const std::string& dir) {
  fs::path p = fs::path(dir).lexically_normal();
  if (p.filename().empty() && p.has_parent_path()) p = p.parent_path();
  return p;
}

}  // namespace

RunFolder::RunFolder(std::string dir) : dir_(std::move(dir)) {}

RunFolder RunFolder::of_checkpoint(const std::string& checkpoint) {
  const fs::path dir = fs::absolute(checkpoint).parent_path();
  return RunFolder((dir.filename() == "checkpoints" ? dir.parent_path() : dir).string());
}

std::string RunFolder::name() const { return normal(fs::absolute(dir_).string()).filename().string(); }

std::string RunFolder::path() const { return normal(fs::absolute(dir_).string()).string(); }

std::string RunFolder::at(const std::string& relative) const { return (fs::path(dir_) / relative).string(); }

std::string RunFolder::config() const { return at("config.yaml"); }
std::string RunFolder::metrics() const { return at("metrics.jsonl"); }
std::string RunFolder::lock() const { return at("lock"); }
std::string RunFolder::kernel_paths() const { return at("kernel_paths.json"); }
std::string RunFolder::checkpoints() const { return at("checkpoints"); }
std::string RunFolder::latest_checkpoint() const { return at("checkpoints/latest.pt"); }
std::string RunFolder::best_checkpoint() const { return at("checkpoints/best.pt"); }
std::string RunFolder::snapshots() const { return at("snapshots"); }
std::string RunFolder::snapshot_index() const { return at("snapshots/index.jsonl"); }
std::string RunFolder::snapshot(int64_t step) const { return snapshot_file(snapshot_file_name(step)); }
std::string RunFolder::snapshot_file(const std::string& file) const { return (fs::path(snapshots()) / file).string(); }
std::string RunFolder::snapshot_kernels(int64_t step) const {
  return snapshot_file(snapshot_file_name(step).replace(0, 3, "attn"));
}
std::string RunFolder::snapshot_usage(int64_t step) const {
  std::string name = snapshot_file_name(step).replace(0, 3, "model");
  return snapshot_file(name.replace(name.size() - 4, 4, ".json"));
}
std::string RunFolder::eval_dir() const { return at("eval"); }
std::string RunFolder::position_loss(const std::string& split) const {
  return at("eval/per_position_loss_" + split + ".csv");
}
std::string RunFolder::shift_loss(const std::string& split) const { return at("eval/shift_loss_" + split + ".csv"); }
std::string RunFolder::extend_dir() const { return at("extend"); }
std::string RunFolder::extension_checkpoint(int64_t to, const std::string& method) const {
  return (fs::path(dir_) / "extend" / (std::to_string(to) + "-" + method) / "checkpoint.pt")
      .lexically_normal()
      .string();
}
std::string RunFolder::analysis_dir() const { return at("analysis"); }
std::string RunFolder::trajectory_csv() const { return at("analysis/trajectory.csv"); }
std::string RunFolder::trajectory_json() const { return at("analysis/trajectory.json"); }
std::string RunFolder::verdict_json() const { return at("analysis/verdict.json"); }
std::string RunFolder::report_dir() const { return at("report"); }
std::string RunFolder::tensorboard_dir() const { return at("tensorboard"); }

std::vector<std::string> RunFolder::written_folders() const {
  return {checkpoints(), snapshots(), report_dir(), tensorboard_dir(), dir_};
}

std::vector<std::string> RunFolder::files_of_a_started_run() const {
  return {latest_checkpoint(), metrics(), snapshot_index()};
}

std::vector<std::string> RunFolder::entries_a_run_writes() const {
  return {config(), kernel_paths(), metrics(), checkpoints(), snapshots(), report_dir(), tensorboard_dir()};
}

std::vector<std::string> RunFolder::entries_written() const {
  std::vector<std::string> out;
  for (const std::string& p : entries_a_run_writes()) {
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);  // a link to another disk's folder: that folder
    if (!fs::exists(st)) continue;
    if (fs::is_directory(st) && fs::is_empty(p, ec) && !ec) continue;
    out.push_back(p);
  }
  return out;
}

bool RunFolder::has_config_and_metrics() const {
  std::error_code ec;
  return fs::is_regular_file(config(), ec) && fs::is_regular_file(metrics(), ec);
}

bool RunFolder::has_snapshots() const {
  std::error_code ec;
  return fs::is_regular_file(snapshot_index(), ec);
}

std::string snapshot_file_name(int64_t step) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "wpe_step%06lld.npy", static_cast<long long>(step));
  return buf;
}

std::optional<int64_t> snapshot_step_of(const std::string& name) {
  const std::string head = "wpe_step", tail = ".npy";
  if (name.size() <= head.size() + tail.size() || name.compare(0, head.size(), head) != 0 ||
      name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
    return std::nullopt;
  const std::string digits = name.substr(head.size(), name.size() - head.size() - tail.size());
  if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(digits);
}

std::string snapshot_analysis_path(const std::string& npy_path) {
  return fs::path(npy_path).replace_extension(".json").string();
}

std::string extension_info_path(const std::string& checkpoint) {
  return fs::path(checkpoint).replace_extension(".extension.json").string();
}

std::string extension_table_path(const std::string& checkpoint) {
  return fs::path(checkpoint).replace_extension(".wpe.npy").string();
}

bool is_extension_info(const std::string& path) {
  const std::string suffix = ".extension.json";
  return path.size() > suffix.size() && ends_with(path, suffix);
}

std::string sweep_index_path(const std::string& sweep_dir) { return (fs::path(sweep_dir) / "sweep.json").string(); }

std::string sweep_run_dir(const std::string& sweep_dir, const std::string& variant, int64_t seed) {
  return (fs::path(sweep_dir) / variant / sweep_run_name(seed)).string();
}

std::string sweep_compare_dir(const std::string& sweep_dir) { return (fs::path(sweep_dir) / "compare").string(); }

std::string sweep_run_name(int64_t seed) { return kSeedPrefix + std::to_string(seed); }

std::string variant_of_run_dir(const std::string& run_dir) {
  const fs::path p = normal(run_dir);
  const std::string name = p.filename().string();
  return name.rfind(kSeedPrefix, 0) == 0 && p.has_parent_path() ? p.parent_path().filename().string() : name;
}

}  // namespace poslab
