#include "sweep/sweep.h"

#include <nlohmann/json.hpp>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <set>

#include "config/config.h"
#include "report/report.h"
#include "run/run_files.h"
#include "train/checkpoint.h"
#include "train/progress.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/lock.h"
#include "util/signals.h"

namespace poslab {
namespace fs = std::filesystem;
namespace {

const char* kSweepKeys = "name, base, seeds, set, grid, variants";

// A YAML value as one line of YAML text, as --set takes it ("none", "0.02", "[a.txt, b.txt]").
std::string yaml_text(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

// The overrides of a `set:` map, in file order; `where` names it in errors.
std::vector<std::pair<std::string, std::string>> read_sets(const YAML::Node& n, const std::string& where) {
  if (!n.IsMap()) throw Error(where + ": expected a map of config keys to values, e.g. {train.max_steps: 300}");
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& kv : n) out.emplace_back(kv.first.as<std::string>(), yaml_text(kv.second));
  return out;
}

// A variant name safe as a folder name: letters, digits and ._- kept, anything else becomes '-'.
std::string folder_safe(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '-';
  return out;
}

void check_name(const std::string& name, const std::string& where) {
  if (name.empty() || name == "." || name == ".." || folder_safe(name) != name)
    throw Error(where + " = '" + name + "': not a folder name", "use letters, digits, '.', '_' and '-' only");
}

// A run of the sweep stopped before its first checkpoint left files (snapshot 0, best.pt, the first log lines) and
// nothing to resume from. Its fresh start writes the same bits again: what the stopped start wrote goes first, so
// that the folder is free (the sweep owns it: SWEEP_DIR/VARIANT/seed-S).
void clear_unresumable_start(const RunFolder& run) {
  std::error_code ec;
  std::string left;
  for (const std::string& f : run.files_of_a_started_run())
    if (fs::exists(f, ec)) left += (left.empty() ? "" : ", ") + fs::path(f).filename().string();
  if (left.empty()) return;
  const RunLock lock(run.lock());  // a live trainer in the folder (another sweep's) is an error, never cleared
  spdlog::warn("{}: a start stopped before its first checkpoint left {}: nothing to resume from; training it afresh",
               run.dir(), left);
  for (const std::string& d : {run.checkpoints(), run.snapshots(), run.eval_dir(), run.report_dir()}) fs::remove_all(d, ec);
  fs::remove(run.metrics(), ec);
}

std::vector<std::string> as_override_list(const std::vector<std::pair<std::string, std::string>>& sets) {
  std::vector<std::string> out;
  for (const auto& [k, v] : sets) out.push_back(k + "=" + v);
  return out;
}

}  // namespace

Sweep load_sweep(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw Error(path + ": cannot read the sweep file", "check the path");
  } catch (const YAML::Exception& e) {
    throw Error(path + ": not valid YAML: " + e.what(), "fix the sweep file");
  }
  if (!root.IsMap()) throw Error(path + ": a sweep file is a YAML map", std::string("keys: ") + kSweepKeys);
  Sweep s;
  s.file = path;
  s.name = fs::path(path).stem().string();
  try {
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      const YAML::Node& v = kv.second;
      if (key == "name") {
        s.name = v.as<std::string>();
      } else if (key == "base") {
        const fs::path base = v.as<std::string>();
        s.base = (base.is_absolute() ? base : fs::path(path).parent_path() / base).lexically_normal().string();
        std::error_code ec;
        if (!fs::is_regular_file(s.base, ec))
          throw Error(path + ": base = " + v.as<std::string>() + ": no such config file (" + s.base + ")",
                      "base is relative to the sweep file's folder");
      } else if (key == "seeds") {
        if (!v.IsSequence() || v.size() == 0) throw Error(path + ": seeds: expected a non-empty list of integers, e.g. [1, 2, 3]");
        for (const auto& x : v) s.seeds.push_back(x.as<int64_t>());
        if (std::set<int64_t>(s.seeds.begin(), s.seeds.end()).size() != s.seeds.size())
          throw Error(path + ": seeds: " + yaml_text(v) + " repeats a seed", "list each seed once");
      } else if (key == "set") {
        s.sets = read_sets(v, path + ": set");
      } else if (key != "grid" && key != "variants") {
        throw Error(path + ": unknown key '" + key + "'", std::string("a sweep file has: ") + kSweepKeys);
      }
    }
    if (s.seeds.empty()) throw Error(path + ": seeds: missing", "list the seeds of the repetitions, e.g. seeds: [1, 2, 3]");
    check_name(s.name, path + ": name");

    // Named variants (or one unnamed), each crossed with every point of the grid.
    std::vector<SweepVariant> named = {SweepVariant{}};
    if (const YAML::Node v = root["variants"]) {
      if (!v.IsSequence() || v.size() == 0) throw Error(path + ": variants: expected a non-empty list of {name, set}");
      named.clear();
      for (size_t i = 0; i < v.size(); ++i) {
        const std::string where = path + ": variants[" + std::to_string(i) + "]";
        if (!v[i].IsMap() || !v[i]["name"]) throw Error(where + ": expected {name: NAME, set: {key: value, ...}}");
        for (const auto& kv : v[i])
          if (kv.first.as<std::string>() != "name" && kv.first.as<std::string>() != "set")
            throw Error(where + ": unknown key '" + kv.first.as<std::string>() + "'", "a variant has name and set");
        SweepVariant sv;
        sv.name = v[i]["name"].as<std::string>();
        check_name(sv.name, where + ".name");
        if (v[i]["set"]) sv.sets = read_sets(v[i]["set"], where + ".set");
        named.push_back(sv);
      }
    }
    std::vector<SweepVariant> points = {SweepVariant{}};
    if (const YAML::Node g = root["grid"]) {
      if (!g.IsMap() || g.size() == 0) throw Error(path + ": grid: expected a map of config keys to lists of values");
      for (const auto& kv : g) {
        const std::string key = kv.first.as<std::string>();
        if (!kv.second.IsSequence() || kv.second.size() == 0)
          throw Error(path + ": grid." + key + ": expected a non-empty list of values, e.g. [64, 128]");
        const std::string short_key = key.substr(key.rfind('.') + 1);
        std::vector<SweepVariant> next;
        for (const auto& p : points)
          for (const auto& value : kv.second) {
            SweepVariant q = p;
            const std::string text = yaml_text(value);
            q.name += (q.name.empty() ? "" : "_") + folder_safe(short_key + "-" + text);
            q.sets.emplace_back(key, text);
            next.push_back(q);
          }
        points = next;
      }
    }
    for (const auto& n : named)
      for (const auto& p : points) {
        SweepVariant v;
        v.name = n.name.empty() ? p.name : p.name.empty() ? n.name : n.name + "_" + p.name;
        if (v.name.empty()) v.name = "base";
        v.sets = n.sets;
        v.sets.insert(v.sets.end(), p.sets.begin(), p.sets.end());
        s.variants.push_back(v);
      }
  } catch (const YAML::Exception& e) {
    throw Error(path + ": " + e.what(), std::string("a sweep file has: ") + kSweepKeys);
  }
  std::set<std::string> names;
  for (const auto& v : s.variants)
    if (!names.insert(v.name).second)
      throw Error(path + ": two variants are named '" + v.name + "'", "give each variant its own name");
  // Every variant's config must load: an unknown key or an impossible value fails now, not hours in.
  for (const auto& v : s.variants) {
    std::vector<std::string> o = as_override_list(s.sets);
    for (const auto& x : as_override_list(v.sets)) o.push_back(x);
    try {
      load_config(s.base, o);
    } catch (const Error& e) {
      throw Error(path + ": variant " + v.name + ": " + e.what(), e.hint());
    }
  }
  return s;
}

std::string sweep_dir(const Sweep& sweep, const std::vector<std::string>& cli_sets) {
  std::vector<std::string> o = as_override_list(sweep.sets);
  o.insert(o.end(), cli_sets.begin(), cli_sets.end());
  return (fs::path(load_config(sweep.base, o).run.out_dir) / sweep.name).string();
}

std::vector<SweepRun> sweep_runs(const Sweep& sweep, const std::vector<std::string>& cli_sets) {
  const std::string dir = sweep_dir(sweep, cli_sets);
  std::vector<SweepRun> runs;
  for (int64_t seed : sweep.seeds)
    for (const auto& v : sweep.variants) {
      SweepRun r;
      r.variant = v.name;
      r.seed = seed;
      r.run_dir = sweep_run_dir(dir, v.name, seed);
      r.overrides = as_override_list(sweep.sets);
      for (const auto& x : as_override_list(v.sets)) r.overrides.push_back(x);
      r.overrides.insert(r.overrides.end(), cli_sets.begin(), cli_sets.end());
      r.overrides.push_back("run.seed=" + std::to_string(seed));
      r.overrides.push_back("run.out_dir=" + (fs::path(dir) / v.name).string());
      r.overrides.push_back("run.name=" + sweep_run_name(seed));
      runs.push_back(r);
    }
  return runs;
}

SweepSummary run_sweep(const std::string& sweep_file, const SweepOptions& opt) {
  using Clock = std::chrono::steady_clock;
  const Sweep sweep = load_sweep(sweep_file);
  const std::vector<SweepRun> runs = sweep_runs(sweep, opt.sets);
  SweepSummary sum;
  sum.dir = sweep_dir(sweep, opt.sets);
  sum.runs = static_cast<int>(runs.size());
  make_dirs(sum.dir);

  SweepIndex index;
  index.name = sweep.name;
  index.file = fs::absolute(sweep.file).string();
  index.base = sweep.base;
  index.sweep_yaml = read_file(sweep.file);
  index.seeds = sweep.seeds;
  index.set = opt.sets;
  for (const auto& v : sweep.variants) {
    SweepIndex::Variant x{v.name, nlohmann::json::object()};
    for (const auto& [k, val] : v.sets) x.set[k] = val;
    index.variants.push_back(std::move(x));
  }
  for (const auto& r : runs) index.runs.push_back({r.variant, r.seed, fs::relative(r.run_dir, sum.dir).string()});
  write_sweep_index(sum.dir, index);

  double trained_seconds = 0;
  int trained_runs = 0;
  std::vector<std::string> failed;
  for (size_t i = 0; i < runs.size(); ++i) {
    const SweepRun& r = runs[i];
    const Config cfg = load_config(sweep.base, r.overrides);
    const std::string latest = RunFolder(r.run_dir).latest_checkpoint();
    std::error_code ec;
    const bool started = fs::is_regular_file(latest, ec);
    const int64_t at = started ? read_checkpoint_meta(latest).step : -1;
    if (started && at >= cfg.train.max_steps) {
      ++sum.done_before;
      ++sum.finished;
      spdlog::info("sweep {}: run {}/{} {} seed {}: done at step {}, not trained again", sweep.name, i + 1, runs.size(),
                   r.variant, r.seed, at);
      // Stopped between its last checkpoint and the end of its report (index.html is written last): report it now.
      const RunFolder run(r.run_dir);
      if (cfg.run.report && run.has_snapshots() && !fs::exists(fs::path(run.report_dir()) / "index.html", ec)) {
        spdlog::info("sweep {}: {} seed {}: writing the report an interrupted start left unwritten", sweep.name,
                     r.variant, r.seed);
        write_report_of_finished_run(r.run_dir);
      }
      continue;
    }
    if (opt.max_runs > 0 && sum.trained + sum.resumed >= opt.max_runs) continue;
    if (!started) clear_unresumable_start(RunFolder(r.run_dir));
    const int left = static_cast<int>(runs.size() - i);
    spdlog::info("sweep {}: run {}/{} {} seed {}: {}{}", sweep.name, i + 1, runs.size(), r.variant, r.seed,
                 started ? "resuming from step " + std::to_string(at) : std::string("training"),
                 trained_runs > 0 ? " | ETA " + Progress::format_duration(trained_seconds / trained_runs * left) : "");
    TrainRequest req;
    req.overrides = r.overrides;
    req.stop_at = opt.stop_at;
    if (started) req.resume_dir = r.run_dir;
    else req.config_path = sweep.base;
    const auto t0 = Clock::now();
    TrainSummary s;
    try {
      s = train(req);
      if (s.report_due) s.report_html = write_report_of_finished_run(s.run_dir);
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
  spdlog::info("sweep {}: {} runs | {} done before, {} trained, {} resumed | {} finished | {}", sweep.name, sum.runs,
               sum.done_before, sum.trained, sum.resumed, sum.finished, sum.dir);
  if (!failed.empty())
    throw Error("sweep " + sweep.name + ": " + std::to_string(failed.size()) + " run" + (failed.size() == 1 ? "" : "s") +
                    " failed (first: " + failed.front() + "); the others are trained",
                "see each run's error above; fix it and run the sweep again: finished runs are not trained again");
  return sum;
}

}  // namespace poslab
