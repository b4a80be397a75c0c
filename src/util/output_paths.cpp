#include "util/output_paths.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "util/error.h"

namespace poslab {
namespace fs = std::filesystem;

namespace {

// A folder poslab train made and writes: its config and its checkpoints.
bool is_run_folder(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "config.yaml", ec) && fs::is_directory(dir / "checkpoints", ec);
}

// A folder poslab sweep made and writes: its index of the sweep's runs (run/run_files.h, is_sweep_dir).
bool is_sweep_folder(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "sweep.json", ec);
}

}  // namespace

std::string run_record_of(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  if (ec) return "";
  if (p.filename().empty()) p = p.parent_path();
  if (is_run_folder(p)) return p.string();
  for (; p.has_relative_path(); p = p.parent_path()) {  // checkpoints/, snapshots/, tensorboard/ and any folder inside
    const std::string name = p.filename().string();
    if ((name == "checkpoints" || name == "snapshots" || name == "tensorboard") && is_run_folder(p.parent_path()))
      return p.parent_path().string();
  }
  return "";
}

std::string real_place(const std::string& path) {
  std::error_code ec;
  const fs::path at = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return (at.filename().empty() ? at.parent_path() : at).string();
}

bool lies_within(const std::string& path, const std::string& folder) {
  const fs::path where = real_place(path), in = real_place(folder);
  return std::mismatch(in.begin(), in.end(), where.begin(), where.end()).first == in.end();
}

void check_output_folder(const std::string& dir, const std::string& option, bool force, const std::string& instead,
                         const std::vector<std::string>& corpus) {
  if (dir.empty()) return;
  const std::string named = option + " " + dir;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw Error(named + ": is a file, not a folder", "name a folder that does not exist yet");
  for (const std::string& in : corpus)
    if (fs::is_directory(real_place(in), ec) && lies_within(dir, in))
      throw Error(named + ": is in the corpus folder " + in +
                      " (data.corpus): what is written there would join the "
                      "corpus",
                  "name a folder outside it");
  if (const std::string run = run_record_of(dir); !run.empty())
    throw Error(named + ": is a folder of the training run in " + run + ", which no other command writes into",
                "name a folder outside the run's own record (e.g. " +
                    (instead.empty() ? (fs::path(run) / "export").string() : instead) + ", or elsewhere)");
  if (is_sweep_folder(dir))
    throw Error(named + ": is the folder of a sweep (it holds sweep.json), which only poslab sweep writes into",
                "name a folder outside it");
  if (force) return;
  if (const std::string held = folder_contents(dir); !held.empty())
    throw Error(named + ": already holds " + held,
                "name a new folder, or pass --force to write into it (files of the same name are replaced)");
}

void check_output_file(const std::string& path, const std::string& option, bool force,
                       const std::vector<std::string>& inputs, const std::vector<std::string>& corpus) {
  if (path.empty() || path == "-") return;
  const std::string named = option + " " + path;
  std::error_code ec;
  if (fs::is_directory(path, ec) || !fs::path(path).has_filename())
    throw Error(named + ": is a folder, not a file", "name a file, e.g. " + (fs::path(path) / "out").string());
  for (const std::string& in : inputs)
    if (!in.empty() && fs::exists(path, ec) && fs::equivalent(path, in, ec))
      throw Error(named + ": is the file this command reads (" + in + "): the output would replace it",
                  "name another file");
  // The corpus: a file of it would be replaced; a file written into a folder of it would join it.
  for (const std::string& in : corpus) {
    if (fs::exists(path, ec) && fs::equivalent(path, in, ec))
      throw Error(named + ": is a file of the corpus (data.corpus: " + in + "): the output would replace it",
                  "name another file");
    if (fs::is_directory(real_place(in), ec) && lies_within(path, in))
      throw Error(named + ": is in the corpus folder " + in + " (data.corpus): the output would join the corpus",
                  "name a file outside it");
  }
  const bool exists = fs::exists(path, ec);
  // A training run's own record (its config, logs, lock, and its checkpoints/, snapshots/ and tensorboard/ folders:
  // what a folder holding config.yaml and checkpoints/ keeps) takes no output, there or not yet, --force or not (a
  // file named as the trainer's next snapshot, or its lock, would be taken for the run's); what commands write there
  // (analysis/, eval/, report/, extend/) does.
  {
    const fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
    const std::string name = p.filename().string();
    const std::string how =
        "name a file outside the run's own record (its analysis/, eval/, extend/ or report/ folders, or elsewhere)";
    if (is_run_folder(p.parent_path()) &&
        (name == "config.yaml" || name == "metrics.jsonl" || name == "kernel_paths.json" || name == "lock"))
      throw Error(named + ": is " + (exists ? "a file" : "the name of a file") + " of the training run in " +
                      p.parent_path().string() + ", which no other command writes",
                  how);
    if (const std::string run = run_record_of(p.parent_path().string());
        !run.empty() && run != p.parent_path().string())
      throw Error(named + ": is in " + p.parent_path().string() + ", a folder of the training run in " + run +
                      ", which no other command writes into",
                  how);
  }
  if (exists && !force) throw Error(named + ": already exists", "name a new file, or pass --force to replace it");
  // Its folder, or where a missing one would be made: the nearest folder above that exists.
  fs::path folder = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  while (!fs::exists(folder, ec) && folder.has_parent_path() && folder.parent_path() != folder)
    folder = folder.parent_path();
  if (!fs::is_directory(folder, ec))
    throw Error(named + ": cannot be written there (" + folder.string() + " is a file)",
                "name " + option + " a file in a folder you can write to");
  const std::string trial = (folder / (".poslab-trial." + std::to_string(::getpid()))).string();
  const int fd = ::open(trial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    throw Error(named + ": cannot be written there (" + folder.string() + ": " + std::strerror(errno) + ")",
                "name a file in a folder you can write to");
  ::close(fd);
  ::unlink(trial.c_str());
}

std::string folder_contents(const std::string& dir) {
  std::error_code ec;
  std::string names;
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (n++ < 3) names += (names.empty() ? "" : ", ") + e.path().filename().string();
  if (n == 0) return "";
  return std::to_string(n) + (n == 1 ? " file or folder (" : " files or folders (") + names + (n > 3 ? ", …)" : ")");
}

void GivenOnce::add(const std::string& path, const std::string& as) {
  std::error_code ec;
  const fs::path key = fs::weakly_canonical(path, ec);
  const auto [it, fresh] = seen_.emplace(ec ? path : key.string(), as);
  if (!fresh) throw Error(command_ + ": " + path + " is given twice (as " + it->second + " and as " + as + ")", hint_);
}

}  // namespace poslab
