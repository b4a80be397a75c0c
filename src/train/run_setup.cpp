#include "train/run_setup.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <filesystem>

#include "run/json_records.h"
#include "run/run_files.h"
#include "run/run_folder.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/shell.h"

namespace poslab {
namespace fs = std::filesystem;
namespace {

// Whether something is at `path`; one that cannot be looked at is an error (looked_at), never "missing": a resume
// would take a run whose checkpoint it cannot see for one that wrote none.
bool there(const std::string& path) { return fs::exists(looked_at(path)); }

// train.init_from names a checkpoint that exists (its contents are checked when it is loaded).
void check_init_from(const std::string& path, const std::string& origin) {
  std::error_code ec;
  if (!path.empty() && fs::is_directory(path, ec))
    throw Error(origin + ": train.init_from = " + path + ": a folder, not a checkpoint",
                fs::is_regular_file(RunFolder(path).latest_checkpoint(), ec)
                    ? "name the run's checkpoint: train.init_from: " + RunFolder(path).latest_checkpoint() +
                          " (or best.pt beside it)"
                    : "name a checkpoint file, e.g. runs/NAME/checkpoints/best.pt or one written by poslab extend");
  if (!path.empty() && !fs::is_regular_file(path, ec))
    throw Error(origin + ": train.init_from = " + path + ": no such checkpoint",
                "name a checkpoint file, e.g. runs/NAME/checkpoints/best.pt or one written by poslab extend");
}

void check_init_from(const Config& cfg) { check_init_from(cfg.train.init_from, origin_of(cfg, "train.init_from")); }

// Never mix two runs in one folder, never overwrite a run's files.
void check_folder_is_free(const std::string& rdir) {
  const RunFolder run(rdir);
  for (const std::string& f : run.files_of_a_started_run()) {
    std::error_code ec;
    if (!there(f)) continue;
    if (!there(run.latest_checkpoint())) {  // stopped before its first checkpoint: nothing to resume from
      check_restart_loses_nothing(run);     // (or a latest.pt lost after it went on)
      throw Error(rdir + ": already holds a run that stopped before its first checkpoint (" + f + ")",
                  "start it again in its folder with poslab train --resume " + rdir +
                      ", or pick another "
                      "--set run.name=NAME");
    }
    throw Error(rdir + ": already holds a run (" + f + ")",
                "continue it with poslab train --resume " + rdir + ", or pick another --set run.name=NAME");
  }
  // Files a run writes, but no log: a start stopped as it set up (its config.yaml), or files put there by hand. A new
  // run would write over them.
  const std::vector<std::string> written = run.entries_written();
  if (written.empty()) return;
  std::string names;
  for (const std::string& p : written) names += (names.empty() ? "" : ", ") + fs::path(p).filename().string();
  const bool config = std::find(written.begin(), written.end(), run.config()) != written.end();
  throw Error(rdir + ": holds what a new run writes (" + names + "), which it would write over",
              (config ? "a start stopped before its first step: start it again there with poslab train --resume " +
                            shell_word(rdir) + "; or "
                      : std::string()) +
                  "pick another --set run.name=NAME, or move " + (written.size() == 1 ? "it" : "them") +
                  " away; nothing was changed");
}

// The folder's latest.pt is its own run's: the name, model and seed its config.yaml records (a checkpoint of another
// run copied in would have its logs cut back and its config written over this run's). And config.yaml says what the
// checkpoint holds, but for the keys this resume sets (`resumed`: the checkpoint's config and --set): an edit of it
// would be written over without a word (a resume takes its config from the checkpoint). A folder without config.yaml
// is left to the resume.
void check_checkpoint_is_the_runs(const RunFolder& run, const Config& stored, const Config& resumed) {
  std::error_code ec;
  if (!fs::is_regular_file(run.config(), ec)) return;
  Config folder;
  try {
    folder = config_from_yaml(read_file(run.config()), run.config());
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (a resume takes its config from " + run.latest_checkpoint() +
                    " and writes config.yaml anew)",
                "mend config.yaml, or delete it to have the resume write it from the checkpoint; nothing was "
                "changed");
  }
  std::string differ;
  if (stored.run.name != folder.run.name)
    differ = fmt::format("run.name {} in the checkpoint, {} in config.yaml", stored.run.name, folder.run.name);
  if (const std::string arch = architecture_difference(stored.model, folder.model); !arch.empty())  // "… vs …"
    differ += (differ.empty() ? "" : "; ") + arch;
  if (stored.run.seed != folder.run.seed)
    differ += fmt::format("{}run.seed {} in the checkpoint, {} in config.yaml", differ.empty() ? "" : "; ",
                          stored.run.seed, folder.run.seed);
  if (!differ.empty())
    throw Error(
        run.latest_checkpoint() + ": a checkpoint of another run than " + run.config() + " records (" + differ + ")",
        "put this run's own checkpoint back (checkpoints/best.pt is one), or resume the run the checkpoint "
        "comes from; nothing was changed");
  std::string edited, sets;
  for (const ConfigChange& c : config_changes(resumed, folder)) {
    if (origin_of(resumed, c.key) != origin_of(stored, c.key)) continue;  // this resume sets it: --set, a sweep
    edited +=
        fmt::format("{}{} {} in config.yaml, {} in the checkpoint", edited.empty() ? "" : "; ", c.key, c.to, c.from);
    sets += " --set " + shell_word(c.key + "=" + c.to);
  }
  if (!edited.empty())
    throw Error(run.config() + " says otherwise than its checkpoint " + run.latest_checkpoint() + " (" + edited +
                    "): a resume trains on with the checkpoint's config and the --set values, and writes config.yaml "
                    "anew",
                "to train on with config.yaml's values, give them:" + sets +
                    " (or put config.yaml back as it was); if the checkpoint is another run's, put this run's own "
                    "back (checkpoints/best.pt is one); nothing was changed");
}

// A trainer killed while writing leaves its temporary files; with the lock held, no writer is running.
void remove_interrupted_writes(const std::string& rdir) {
  int stale = 0;
  for (const std::string& dir : RunFolder(rdir).written_folders()) stale += remove_stale_temporaries(dir);
  if (stale > 0) spdlog::warn("removed {} temporary file{} left by an interrupted write", stale, stale == 1 ? "" : "s");
}

// A --set of run.name or run.out_dir on a resume: the run's folder stays where it is, so they may only name it (a
// sweep names its runs' folders so, and a moved sweep names their new place).
void check_resume_stays_in_its_folder(const std::string& rdir, const Config& requested) {
  std::string sets;
  for (const auto& [key, value] : {std::pair{"run.name", requested.run.name}, {"run.out_dir", requested.run.out_dir}})
    if (origin_of(requested, key) == "--set") sets += fmt::format("{}--set {}={}", sets.empty() ? "" : " ", key, value);
  std::error_code ec;
  if (sets.empty() || fs::equivalent(fs::path(requested.run.out_dir) / requested.run.name, rdir, ec)) return;
  throw Error(sets + ": a resumed run stays in its folder " + rdir +
                  "; run.name and run.out_dir name where a new run's folder goes",
              "leave them out of --set; to go on in another folder, copy the run there and resume the copy: cp -r " +
                  shell_word(rdir) + " NEW_DIR && poslab train --resume NEW_DIR");
}

}  // namespace

void check_resume_keeps_its_start(const std::string& latest, const Config& stored, const Config& requested) {
  struct Fixed {
    const char* key;
    const char* why;
    bool new_weights_run;  // a run from these weights (--init-from) can take the new value
  };
  static const Fixed fixed[] = {
      {"run.seed", "the run's random streams go on from the checkpoint", true},
      {"data.val_fraction",
       "the split between training and validation tokens is the run's: its losses before and after would measure "
       "different sets",
       true},
      {"data.tokenizer.type", "a resumed run keeps the tokenizer stored in its checkpoint", false},
      {"data.tokenizer.vocab_size", "a resumed run keeps the tokenizer stored in its checkpoint", false},
      {"data.tokenizer.model", "a resumed run keeps the tokenizer stored in its checkpoint", false},
  };
  for (const ConfigChange& c : config_changes(stored, requested)) {
    // A char tokenizer takes no vocab_size: its value changes nothing.
    if (c.key == "data.tokenizer.vocab_size" && stored.data.tokenizer.type == "char" &&
        requested.data.tokenizer.type == "char")
      continue;
    const std::string set = shell_word(c.key + "=" + c.to);
    // Where the new value was given: --set, or a sweep file's set: or variant.
    const std::string source = origin_of(requested, c.key);
    const std::string given = source == "--set" ? "--set " + c.key + "=" + c.to : source + ": " + c.key + "=" + c.to;
    if (c.key == "train.init_from") {  // the resumed run's weights are its checkpoint's, wherever they came from
      const auto none = [](const std::string& v) { return v.empty() || v == "\"\""; };
      throw Error(
          fmt::format("{}: a resumed run goes on from its checkpoint {}; train.init_from names where a new "
                      "run's first weights come from ({} in the run's config)",
                      given, latest, none(c.from) ? "none" : c.from),
          fmt::format("leave train.init_from out of {} when resuming; to start a new run from {}: poslab train "
                      "--init-from {} --set run.name=NEW_NAME",
                      source, none(c.to) ? "other weights" : c.to, none(c.to) ? "CHECKPOINT" : shell_word(c.to)));
    }
    for (const Fixed& f : fixed)
      if (c.key == f.key)
        throw Error(
            fmt::format("{}: {} is at {} = {}; {}", given, latest, c.key, c.from, f.why),
            f.new_weights_run
                ? fmt::format("leave {} out of {} when resuming; to train with it, start a new run from "
                              "this one's weights: poslab train --init-from {} --set run.name=NEW_NAME --set {}",
                              c.key, source, shell_word(latest), set)
                : fmt::format("leave {} out of {} when resuming; another tokenizer needs a new run from "
                              "the config: poslab train CONFIG --set {}",
                              c.key, source, set));
  }
  if (const std::string diff = architecture_difference(stored.model, requested.model); !diff.empty())
    throw Error(latest + ": checkpoint architecture differs from the requested model: " + diff,
                "leave the model's keys out of --set: a resumed run keeps its model (poslab train --init-from starts "
                "a new run from its weights)");
  // A scale other than 1 gives the table an AdamW group of its own (train/optim.h): the checkpoint's optimizer
  // state has one group fewer or more than the resumed run's would.
  const double stored_scale = stored.train.position_lr_scale;
  if ((stored_scale != 1.0) != (requested.train.position_lr_scale != 1.0))
    throw Error(latest + ": train.position_lr_scale " + fmt::format("{}", stored_scale) + " in the checkpoint vs " +
                    fmt::format("{}", requested.train.position_lr_scale) +
                    ": 1 and any other value keep the table's optimizer state in different groups",
                "resume with a scale that is 1 where the run's is 1 and not 1 where it is not, or start a new run "
                "from its weights: poslab train CONFIG --init-from " +
                    latest);
}

std::vector<std::string> take_init_from_tokenizer(Config& cfg) {
  if (cfg.train.init_from.empty()) return {};
  const std::string& from = cfg.train.init_from;
  const TokenizerConfig kept =
      config_from_yaml(read_checkpoint_meta(from).config_yaml, from + " (stored config)").data.tokenizer;
  TokenizerConfig& asked = cfg.data.tokenizer;
  const std::string its = kept.type + (kept.type == "char" ? "" : fmt::format(", {} pieces", kept.vocab_size));
  std::vector<std::string> unread;
  const struct {
    const char* key;
    std::string asked, kept;
  } keys[] = {{"data.tokenizer.type", asked.type, kept.type},
              {"data.tokenizer.vocab_size", std::to_string(asked.vocab_size), std::to_string(kept.vocab_size)},
              {"data.tokenizer.model", asked.model, kept.model}};
  for (const auto& k : keys) {
    if (k.asked != k.kept && origin_of(cfg, k.key) != "default")
      unread.push_back(
          fmt::format("{}{} = {} is not read: a run from train.init_from's weights tokenizes with the "
                      "tokenizer of {} ({}); leave it out of this config",
                      origin_prefix(cfg, k.key), k.key, k.asked.empty() ? "\"\"" : k.asked, from, its));
    cfg.origin[k.key] = from + " (stored config)";
  }
  asked = kept;
  return unread;
}

bool restarts_in_place(const TrainRequest& req) {
  if (req.resume_dir.empty()) return false;
  const RunFolder run(req.resume_dir);
  std::error_code ec;
  return !there(run.latest_checkpoint()) && there(run.config()) && fs::is_regular_file(run.config(), ec);
}

void check_restart_loses_nothing(const RunFolder& run) {
  std::error_code ec;
  int64_t last = 0;
  if (fs::is_regular_file(run.metrics(), ec))
    for (const MetricsRecord& r : read_metrics(run.metrics())) last = std::max(last, r.step);
  if (fs::is_regular_file(run.snapshot_index(), ec))
    for (const SnapshotRecord& r : read_snapshot_index(run)) last = std::max(last, r.step);
  if (last == 0) return;
  const std::string best = run.best_checkpoint();
  std::string from_best;
  if (fs::is_regular_file(best, ec)) {
    try {
      const int64_t step = read_checkpoint_meta(best).step;
      from_best = fmt::format("to go on from best.pt (step {}): cp {} {} and poslab train --resume {}; ", step, best,
                              run.latest_checkpoint(), run.dir());
    } catch (const Error&) {  // the message is latest.pt's; best.pt offers no way on
      from_best = best + " does not read either (damaged); ";
    }
  }
  throw Error(fmt::format("{}: {} is missing, but the run logged steps up to {}: starting it again from step 0 would "
                          "overwrite what it wrote",
                          run.dir(), run.latest_checkpoint(), last),
              from_best + "to start afresh, move the folder away or pick another --set run.name=NAME");
}

Config resolve_config(const TrainRequest& req, CheckpointMeta& resume_meta) {
  if (req.resume_dir.empty() && !req.init_from.empty()) {
    // --init-from: the config file (or the checkpoint's own config), train.init_from set, then the overrides.
    check_init_from(req.init_from, "--init-from");
    Config cfg;
    if (req.config_path.empty()) {
      cfg = config_from_yaml(read_checkpoint_meta(req.init_from).config_yaml, req.init_from + " (stored config)");
    } else {
      cfg = load_config(req.config_path);
    }
    cfg.train.init_from = fs::absolute(req.init_from).lexically_normal().string();  // found from any folder later
    cfg.origin["train.init_from"] = "--init-from";
    for (const auto& o : req.overrides) apply_override(cfg, o);
    validate(cfg);
    validate_new_run(cfg);
    check_init_from(cfg);
    return cfg;
  }
  if (req.resume_dir.empty()) {
    Config cfg;
    if (req.config_yaml.empty()) {
      cfg = load_config(req.config_path, req.overrides);
    } else {
      cfg = config_from_yaml(req.config_yaml, req.config_path + " (as resolved when the sweep started)");
      for (const auto& o : req.overrides) apply_override(cfg, o);
      validate(cfg);
    }
    validate_new_run(cfg);
    check_init_from(cfg);
    return cfg;
  }
  if (restarts_in_place(req)) {  // no checkpoint yet: the run's own config, as it was set up, starts it again
    check_restart_loses_nothing(RunFolder(req.resume_dir));
    const std::string stored = RunFolder(req.resume_dir).config();
    Config cfg = load_config(stored, req.overrides);
    check_resume_stays_in_its_folder(req.resume_dir, cfg);
    check_init_from(cfg);
    return cfg;
  }
  const std::string latest = RunFolder(req.resume_dir).latest_checkpoint();
  std::error_code ec;
  if (!there(latest))  // and no config.yaml (restarts_in_place): not a run folder at all
    throw Error(
        "--resume " + req.resume_dir + ": not a run folder (it holds no config.yaml and no " + "checkpoints/latest.pt)",
        "--resume takes the folder poslab train made for a run, run.out_dir/run.name (e.g. runs/default)");
  resume_meta = read_checkpoint_meta(latest);
  check_resumable(resume_meta, latest);  // before the corpus is read and the kernels measured
  Config cfg = config_from_yaml(resume_meta.config_yaml, latest + " (stored config)");
  const Config stored = cfg;
  for (const auto& o : req.overrides) apply_override(cfg, o);
  check_checkpoint_is_the_runs(RunFolder(req.resume_dir), stored, cfg);
  validate(cfg);
  check_resume_stays_in_its_folder(req.resume_dir, cfg);
  check_resume_keeps_its_start(latest, stored, cfg);  // before anything is written
  return cfg;
}

void check_config_paths(const Config& cfg) {
  check_corpus_paths(cfg);
  check_init_from(cfg);
}

void check_corpus_paths(const Config& cfg) {
  for (const std::string& p : cfg.data.corpus) {
    std::error_code ec;
    if (fs::exists(p, ec)) continue;
    if (fs::is_symlink(p, ec))
      throw Error(origin_prefix(cfg, "data.corpus") + "data.corpus: " + p + ": a symbolic link to " +
                      fs::read_symlink(p, ec).string() + ", which is missing or a loop of links",
                  "point the link at the corpus, or data.corpus at the corpus itself");
    // A run's stored corpus moved since: the resume takes its new place with --set.
    if (origin_of(cfg, "data.corpus").find("(stored config)") != std::string::npos)
      throw Error(origin_prefix(cfg, "data.corpus") + "data.corpus: " + p + ": corpus path not found",
                  "put the corpus back, or give its new place: poslab train --resume RUN_DIR --set "
                  "data.corpus=NEW_PATH (the same text: a changed corpus is refused)");
    // a relative path is read from the current folder, not the config's: say which folder that was
    const bool relative = fs::path(p).is_relative();
    throw Error(origin_prefix(cfg, "data.corpus") + "data.corpus: " + p + ": corpus path not found" +
                    (relative ? " in the current folder " + fs::current_path(ec).string() : ""),
                relative ? "relative paths are read from the folder poslab runs in: run it from the repository root "
                           "(the shipped configs' paths are the repository's), or fix data.corpus"
                         : "fix data.corpus: list existing files or folders");
  }
}

void check_resumed_max_steps(const TrainRequest& req, const Config& cfg, const CheckpointMeta& resume_meta,
                             bool resuming) {
  if (!resuming || resume_meta.step <= cfg.train.max_steps) return;
  throw Error(fmt::format("{}: train.max_steps = {} ({}), but the run is at step {} already", req.resume_dir,
                          cfg.train.max_steps, origin_words(cfg, "train.max_steps"), resume_meta.step),
              fmt::format("leave train.max_steps as the run has it, or raise it past {} to train on; nothing was "
                          "changed",
                          resume_meta.step));
}

void check_stop_at(const TrainRequest& req, const Config& cfg, const CheckpointMeta& resume_meta, bool resuming) {
  if (req.stop_at < 0) return;
  if (resuming && req.stop_at <= resume_meta.step)
    throw Error(
        fmt::format("--stop-at {}: {} is already at step {}", req.stop_at, req.resume_dir, resume_meta.step),
        fmt::format("name a later step, or leave --stop-at out to train to train.max_steps = {}", cfg.train.max_steps));
  if (req.stop_at > cfg.train.max_steps)
    spdlog::warn("--stop-at {} is past train.max_steps = {}: the run ends at step {}", req.stop_at, cfg.train.max_steps,
                 cfg.train.max_steps);
}

std::unique_ptr<RunLock> set_up_run_folder(const std::string& rdir, const Config& cfg, bool resuming, bool write_config,
                                           Comm& comm, const torch::Device& device) {
  std::unique_ptr<RunLock> lock;
  std::exception_ptr error;
  if (comm.is_main()) {
    try {
      const RunFolder run(rdir);
      // A folder that is there is locked before it is looked at: another trainer setting it up is named as such,
      // never taken for a start that stopped.
      if (std::error_code ec; fs::is_directory(rdir, ec)) lock = std::make_unique<RunLock>(run.lock());
      if (!resuming) check_folder_is_free(rdir);
      make_dirs(rdir, "set run.out_dir to a writable folder");
      if (!lock) lock = std::make_unique<RunLock>(run.lock());
      make_dirs(run.checkpoints());
      remove_interrupted_writes(rdir);
      if (write_config) write_file_atomic(run.config(), to_yaml(cfg));
    } catch (...) {
      error = std::current_exception();
    }
  }
  auto failed = torch::tensor({error ? 1.0f : 0.0f}, torch::TensorOptions().device(device));
  comm.broadcast_({failed}, "the run folder's setup");
  if (error) std::rethrow_exception(error);
  if (failed.item<float>() > 0)
    throw Error(rdir + ": rank 0 could not set up the run folder (its error is above)", "fix that, then start again");
  return lock;
}

Config train_config(const TrainRequest& req) {
  CheckpointMeta resume_meta;
  return resolve_config(req, resume_meta);
}

}  // namespace poslab
