#include "run/tensorboard_files.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "formats/tfevents.h"
#include "run/json_records.h"
#include "util/error.h"
#include "util/fs.h"

namespace poslab {
namespace fs = std::filesystem;

namespace {

constexpr const char* kEventsPrefix = "events.out.tfevents.";
constexpr const char* kEventsSuffix = ".poslab";

bool is_table_tag(const std::string& tag) { return tag.rfind("table/", 0) == 0; }

// The NNNN of events.out.tfevents.NNNN.poslab; -1 for another name.
int64_t event_file_number(const std::string& name) {
  const std::string prefix = kEventsPrefix, suffix = kEventsSuffix;
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return -1;
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

}  // namespace

std::vector<TbScalar> metrics_scalars(const MetricsRecord& r) {
  std::vector<TbScalar> out;
  auto add = [&](const char* tag, double v) {
    if (std::isfinite(v)) out.push_back({r.step, tag, v});
  };
  add("loss/batch", r.loss);
  add("loss/train", r.train_loss);
  add("loss/val", r.val_loss);
  add("lr", r.lr);
  add("tokens_per_s", r.tokens_per_s);
  return out;
}

std::string table_tag(const std::string& key) { return "table/" + key; }

std::string scalar_events(const std::vector<TbScalar>& scalars, double wall_time) {
  std::string out;
  for (const TbScalar& s : scalars)
    if (std::isfinite(s.value))
      out += tf_record(tf_scalar_event(wall_time, s.step, s.tag, static_cast<float>(s.value)));
  return out;
}

std::string projector_tsv(const float* data, int64_t rows, int64_t cols) {
  std::string s;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) s += fmt::format("{}{:.6g}", j ? "\t" : "", data[i * cols + j]);
    s += '\n';
  }
  return s;
}

std::string projector_positions(int64_t rows) {
  std::string s;
  for (int64_t i = 0; i < rows; ++i) s += std::to_string(i) + '\n';
  return s;
}

std::string projector_table_file(int64_t step) { return fmt::format("wpe_step{:06d}.tsv", step); }

std::string projector_config(const std::vector<int64_t>& steps) {
  std::string config;
  for (const int64_t step : steps)
    config += fmt::format(
        "embeddings {{\n  tensor_name: \"wpe step {}\"\n  tensor_path: \"{}\"\n"
        "  metadata_path: \"positions.tsv\"\n}}\n",
        step, projector_table_file(step));
  return config;
}

std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (event_file_number(e.path().filename().string()) >= 0 && e.is_regular_file(ec)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<FileCut> events_cut_after(const RunFolder& run, int64_t step) {
  std::vector<FileCut> cuts;
  for (const std::string& path : event_files(run.tensorboard_dir())) {
    const std::string bytes = read_file(path);
    const TfEventFile file = read_tf_events(bytes);
    if (file.valid < bytes.size())
      spdlog::warn("{}: its last {} bytes are not a whole event (a crash while it was written): left out", path,
                   bytes.size() - file.valid);
    std::string kept;
    size_t begin = 0;
    for (const TfEvent& e : file.events) {
      const bool redone = !e.file_version && (is_table_tag(e.tag) ? e.step > step : e.step >= step);
      if (!redone) kept.append(bytes, begin, e.end - begin);
      begin = e.end;
    }
    if (kept.size() != bytes.size()) cuts.push_back({path, kept});
  }
  return cuts;
}

void truncate_events_after(const RunFolder& run, int64_t step) {
  for (const FileCut& cut : events_cut_after(run, step)) write_file_atomic(cut.path, cut.kept);
}

TensorboardLog::TensorboardLog(const RunFolder& run) : run_(run), dir_(run.tensorboard_dir()) {
  make_dirs(dir_);
  int64_t last = 0;
  for (const std::string& path : event_files(dir_))
    last = std::max(last, event_file_number(fs::path(path).filename().string()));
  events_path_ = (fs::path(dir_) / fmt::format("{}{:04d}{}", kEventsPrefix, last + 1, kEventsSuffix)).string();
  append_bytes(events_path_, tf_record(tf_file_version_event(tf_wall_time())));
  if (run_.has_snapshots()) write_projector_config();
}

void TensorboardLog::add(const std::vector<TbScalar>& scalars) {
  const std::string bytes = scalar_events(scalars, tf_wall_time());
  if (!bytes.empty()) append_bytes(events_path_, bytes);
}

void TensorboardLog::add_table(int64_t step, const float* data, int64_t rows, int64_t cols) {
  write_file_atomic((fs::path(dir_) / projector_table_file(step)).string(), projector_tsv(data, rows, cols));
  const std::string positions = (fs::path(dir_) / "positions.tsv").string();
  if (!is_file(positions)) write_file_atomic(positions, projector_positions(rows));
  write_projector_config();
}

void TensorboardLog::write_projector_config() {
  std::vector<int64_t> steps;
  for (const SnapshotRecord& s : read_snapshot_index(run_))
    if (is_file((fs::path(dir_) / projector_table_file(s.step)).string())) steps.push_back(s.step);
  write_file_atomic((fs::path(dir_) / "projector_config.pbtxt").string(), projector_config(steps));
}

}  // namespace poslab
