// Running a sweep: each run of the sweep file (sweep_file.cpp) trained, resumed or skipped in order (sweep.h).
#include "sweep/sweep.h"

#include <nlohmann/json.hpp>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include "config/config.h"
#include "report/report.h"
#include "run/run_files.h"
#include "train/checkpoint.h"
#include "train/progress.h"
#include "train/run_setup.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/lock.h"
#include "util/plural.h"
#include "util/signals.h"

namespace poslab {
namespace fs = std::filesystem;
namespace {

// A run of the sweep stopped before its first checkpoint left files (snapshot 0, best.pt, the first log lines) and
// nothing to resume from. Its fresh start writes the same bits again: what the stopped start wrote goes first, so
// that the folder is free (the sweep owns it: SWEEP_DIR/VARIANT/seed-S).
void clear_unresumable_start(const RunFolder& run) {
  std::error_code ec;
  std::string left;
  const std::vector<std::string> written = run.entries_written();
  for (const std::string& f : written) left += (left.empty() ? "" : ", ") + fs::path(f).filename().string();
  if (left.empty()) return;
  const RunLock lock(run.lock());    // a live trainer in the folder (another sweep's) is an error, never cleared
  check_restart_loses_nothing(run);  // a lost latest.pt of a run that went on: an error, never cleared
  spdlog::warn("{}: a start stopped before its first checkpoint left {}: nothing to resume from; training it afresh",
               run.dir(), left);
  for (const std::string& p : written) fs::remove_all(p, ec);
  fs::remove_all(run.eval_dir(), ec);
}

// SWEEP_DIR/sweep.json: the sweep file's text, its variants and its runs (run_dir relative to `dir`).
SweepIndex sweep_index(const Sweep& sweep, const std::vector<SweepRun>& runs, const std::vector<std::string>& cli_sets,
                       const std::string& dir) {
  SweepIndex index;
  index.name = sweep.name;
  index.file = fs::absolute(sweep.file).string();
  index.base = sweep.base;
  index.sweep_yaml = read_file(sweep.file);
  index.seeds = sweep.seeds;
  index.set = cli_sets;
  for (const auto& v : sweep.variants) {
    SweepIndex::Variant x{v.name, nlohmann::json::object()};
    for (const auto& [k, val] : v.sets) x.set[k] = val;
    index.variants.push_back(std::move(x));
  }
  for (const auto& r : runs) index.runs.push_back({r.variant, r.seed, fs::relative(r.run_dir, dir).string()});
  return index;
}

// The key of each "key=value".
std::set<std::string> assigned_keys(const std::vector<std::string>& sets) {
  std::set<std::string> keys;
  for (const std::string& o : sets) keys.insert(o.substr(0, o.find('=')));
  return keys;
}

// A run trained by an earlier call (its latest checkpoint holds the config it trains with) against the config the
// sweep file and its base give it now: a key that differs, other than those --set changes for this call and those
// of how it runs, means the base or the sweep file changed since, and the sweep's runs would not share their
// settings. An error before anything is written; `cli_keys` are the keys of --set.
void check_settings_unchanged(const Sweep& sweep, const SweepRun& r, const std::string& checkpoint,
                              const CheckpointMeta& meta, const Config& now, const std::set<std::string>& cli_keys) {
  const Config trained = config_from_yaml(meta.config_yaml, checkpoint);
  std::vector<ConfigChange> changes;
  for (ConfigChange& c : config_changes(trained, now))
    if (cli_keys.count(c.key) == 0 && !says_how_a_run_runs(c.key)) changes.push_back(std::move(c));
  if (changes.empty()) return;
  std::string what;
  for (size_t i = 0; i < changes.size() && i < 3; ++i)
    what += (i == 0 ? "" : ", ") + changes[i].key + " " + changes[i].from + " in the run, " + changes[i].to + " now";
  if (changes.size() > 3) what += " (and " + std::to_string(changes.size() - 3) + " keys more)";
  throw Error("sweep " + sweep.name + ": " + r.run_dir + " trained with other settings than " + sweep.file +
                  (sweep.base.empty() ? "" : " and its base " + sweep.base) + " give it now: " + what +
                  "; the sweep's runs would not share their settings",
              "put the file back as it was when the run trained; or sweep the new settings into a folder of their "
              "own (another name: in the sweep file); --set KEY=VALUE changes every run of one call (--set "
              "train.max_steps=N extends them)");
}

// SWEEP_DIR/sweep.json written by another sweep file with other contents (two files of one stem, without a name:
// of their own): this sweep would replace its index and mix its runs with that sweep's. The same file edited
// (a seed added), by any spelling or link, or the same text from another path (a copy, a move) is this sweep. An
// index that does not say (an older poslab's) or does not read is left to be written again.
void check_folder_is_this_sweeps(const Sweep& sweep, const std::string& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(dir) / "sweep.json", ec)) return;
  SweepIndex was;
  try {
    was = read_sweep_index(dir);
  } catch (const Error& e) {
    spdlog::warn("sweep {}: {} (written again by this sweep)", sweep.name, e.what());
    return;
  }
  if (was.file.empty() && was.sweep_yaml.empty()) return;
  if (fs::equivalent(was.file, sweep.file, ec) || was.sweep_yaml == read_file(sweep.file)) return;
  throw Error("sweep " + sweep.name + ": " + dir + " is the folder of another sweep file, " + was.file +
                  " (its sweep.json); " + sweep.file + " would mix its runs with that sweep's",
              "give this sweep a folder of its own: name: OTHER_NAME in " + sweep.file +
                  " (or --set run.out_dir=ANOTHER_FOLDER)");
}

}  // namespace

int runs_left_to_train(const std::vector<int64_t>& steps, const std::vector<int64_t>& max_steps, size_t from,
                       int max_runs, int trained_so_far) {
  int left = 0;
  for (size_t j = from; j < steps.size() && j < max_steps.size(); ++j) left += steps[j] < max_steps[j];
  return max_runs > 0 ? std::max(0, std::min(left, max_runs - trained_so_far)) : left;
}

bool says_how_a_run_runs(const std::string& key) {
  return (key.rfind("run.", 0) == 0 && key != "run.seed") || key == "data.cache_dir" || key == "train.cuda_graph";
}

SweepSummary run_sweep(const std::string& sweep_file, const SweepOptions& opt) {
  using Clock = std::chrono::steady_clock;
  const Sweep sweep = load_sweep(sweep_file, opt.sets);
  const std::vector<SweepRun> runs = sweep_runs(sweep, opt.sets);
  SweepSummary sum;
  sum.dir = sweep_dir(sweep, opt.sets);
  sum.runs = static_cast<int>(runs.size());
  check_folder_is_this_sweeps(sweep, sum.dir);
  if (sweep.base.empty())  // legal (a sweep of poslab's defaults), but likely a base: forgotten
    spdlog::warn(
        "{}: no base: every run starts from poslab's built-in defaults (poslab config prints them), not a "
        "config file's; add base: CONFIG to start from one",
        sweep_file);
  // Every run's config as the sweep file and its base give it now: the runs trained afresh in this call read these,
  // not the base again, so that an edit of the base while the sweep trains does not reach half its runs.
  std::vector<Config> configs;
  std::vector<int64_t> steps;  // each run's step at its latest checkpoint, -1 for none yet
  const std::set<std::string> cli_keys = assigned_keys(opt.sets);
  for (const SweepRun& r : runs) {
    configs.push_back(load_config(sweep.base, r.overrides));
    const std::string latest = RunFolder(r.run_dir).latest_checkpoint();
    std::error_code ec;
    steps.push_back(-1);
    if (!fs::is_regular_file(latest, ec)) continue;
    const CheckpointMeta meta = read_checkpoint_meta(latest);
    const Config trained = config_from_yaml(meta.config_yaml, latest);
    // A run from train.init_from's weights tokenizes with that checkpoint's tokenizer, which its config records
    // (take_init_from_tokenizer), whatever the base says.
    Config now = configs.back();
    if (!now.train.init_from.empty()) now.data.tokenizer = trained.data.tokenizer;
    check_settings_unchanged(sweep, r, latest, meta, now, cli_keys);
    try {  // --set passes the check above, but not a key the started run's checkpoint fixed
      check_resume_keeps_its_start(latest, trained, now);
    } catch (const Error& e) {
      throw Error("sweep " + sweep.name + ": " + e.what(),
                  "leave that key out of --set: the sweep's started runs keep the value they began with, and its "
                  "runs would not share their settings; sweep the new value into a folder of its own (another "
                  "name: in the sweep file)");
    }
    steps.back() = meta.step;
  }
  make_dirs(sum.dir);
  // One sweep per folder: a second one started at once would skip the run the first trains (its lock), read the
  // runs the first has not reached as its own, and meet the first at each of them.
  const RunLock lock((fs::path(sum.dir) / "sweep.lock").string(), "sweep");
  write_sweep_index(sum.dir, sweep_index(sweep, runs, opt.sets, sum.dir));

  std::vector<int64_t> max_steps;
  for (const Config& c : configs) max_steps.push_back(c.train.max_steps);
  double trained_seconds = 0;
  int trained_runs = 0;
  std::vector<std::string> failed;
  for (size_t i = 0; i < runs.size(); ++i) {
    const SweepRun& r = runs[i];
    const Config& cfg = configs[i];
    const int64_t at = steps[i];
    const bool started = at >= 0;
    if (started && at >= cfg.train.max_steps) {
      ++sum.done_before;
      ++sum.finished;
      spdlog::info("sweep {}: run {}/{} {} seed {}: done at step {}, not trained again", sweep.name, i + 1, runs.size(),
                   r.variant, r.seed, at);
      // Stopped between its last checkpoint and the end of its report (index.html is written last), or extended
      // and stopped there (its page the shorter run's): report it now.
      const RunFolder run(r.run_dir);
      if (cfg.run.report && run.has_snapshots() && !run_report_is_current(r.run_dir)) {
        spdlog::info("sweep {}: {} seed {}: writing the report an interrupted start left unwritten or out of date",
                     sweep.name, r.variant, r.seed);
        write_report_of_finished_run(r.run_dir);
      }
      continue;
    }
    if (opt.max_runs > 0 && sum.trained + sum.resumed >= opt.max_runs) continue;
    if (started && opt.stop_at >= 0 && at >= opt.stop_at) {  // stopped there before: --stop-at holds it there
      spdlog::info("sweep {}: run {}/{} {} seed {}: at step {}, at or past --stop-at {}: left there", sweep.name, i + 1,
                   runs.size(), r.variant, r.seed, at, opt.stop_at);
      continue;
    }
    if (!started) clear_unresumable_start(RunFolder(r.run_dir));
    const int left = runs_left_to_train(steps, max_steps, i, opt.max_runs, sum.trained + sum.resumed);
    spdlog::info("sweep {}: run {}/{} {} seed {}: {}{}", sweep.name, i + 1, runs.size(), r.variant, r.seed,
                 started ? "resuming from step " + std::to_string(at) : std::string("training"),
                 trained_runs > 0 ? " | ETA " + Progress::format_duration(trained_seconds / trained_runs * left) : "");
    TrainRequest req;
    req.overrides = r.overrides;
    req.stop_at = opt.stop_at;
    if (started) {
      req.resume_dir = r.run_dir;
    } else {
      req.config_path = sweep.base;
      req.config_yaml = to_yaml(cfg);
    }
    const auto t0 = Clock::now();
    TrainSummary s;
    try {
      s = train(req);
      if (s.report_due) s.report_html = write_report_of_finished_run(s.run_dir);
      if (s.report_due && s.interrupted_by == 0 && stop_signal() != 0)
        s.interrupted_by = stop_signal();  // in the report
    } catch (const Error& e) {
      spdlog::error("sweep {}: {} seed {} failed: {}{}", sweep.name, r.variant, r.seed, e.what(),
                    e.hint().empty() ? "" : " (" + e.hint() + ")");
      failed.push_back(r.run_dir);
      continue;
    }
    trained_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    ++trained_runs;
    ++(started ? sum.resumed : sum.trained);
    if (s.finished) ++sum.finished;
    if (s.interrupted_by != 0 || !s.finished) {
      sum.interrupted_by = s.interrupted_by;
      spdlog::info("sweep {}: stopped during {} seed {} at step {}; run poslab sweep {} again to go on", sweep.name,
                   r.variant, r.seed, s.steps, sweep_file);
      break;
    }
  }
  spdlog::info("sweep {}: {} | {} done before, {} trained, {} resumed | {} finished | {}", sweep.name,
               counted(sum.runs, "run"), sum.done_before, sum.trained, sum.resumed, sum.finished, sum.dir);
  if (!failed.empty()) {
    const size_t others = runs.size() - failed.size();
    throw Error("sweep " + sweep.name + ": " +
                    (failed.size() == 1
                         ? "the run " + failed.front() + " failed"
                         : fmt::format("{} of {} runs failed, the first {}", failed.size(), sum.runs, failed.front())) +
                    (others == 0 ? std::string() : "; the sweep went on with the " + counted(int64_t(others), "other")),
                "see each run's error above; fix it and run the sweep again: finished runs are not trained again");
  }
  return sum;
}

}  // namespace poslab
