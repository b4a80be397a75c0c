// poslab sweep: a grid of training choices x seeds, each an ordinary run, trained one after another; resumable.
//
// A sweep file (YAML):
//   name: position                  # the sweep's folder under run.out_dir (default: the file's stem)
//   base: ../default.yaml           # the config every run starts from, relative to the sweep file
//   seeds: [1, 2, 3]                # run.seed of each repetition
//   set: {train.max_steps: 600}     # overrides for every run (optional)
//   grid:                           # every combination of these lists is a variant (optional)
//     model.position: [learned, sinusoidal, none]
//   variants:                       # named variants, each its own overrides (optional); with a grid, every
//     - {name: no-decay, set: {train.decay_position_table: false}}   # variant is crossed with every grid point
// Each (variant, seed) trains into RUN_OUT/NAME/VARIANT/seed-S, where RUN_OUT is the runs' run.out_dir.
// sweep_file.cpp reads and checks the file (load_sweep, sweep_runs, sweep_dir); sweep.cpp runs it (run_sweep).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"

namespace poslab {

struct SweepVariant {
  std::string name;                                       // folder name, e.g. "position-none"
  std::vector<std::pair<std::string, std::string>> sets;  // key, value (YAML text), applied in order
};

struct Sweep {
  std::string file;  // the sweep file
  std::string name;
  std::string base;  // resolved path of the base config ("" = defaults)
  std::vector<int64_t> seeds;
  std::vector<std::pair<std::string, std::string>> sets;  // for every run
  std::vector<SweepVariant> variants;                     // the grid crossed with the named variants, in file order
};

// Parses and checks a sweep file: unknown keys, empty lists, duplicate names, a key both a variant and the grid set,
// and every run's config with `cli_sets` (--set, "key=value") applied last (an unknown config key or an impossible
// value) are poslab::Errors naming the sweep file and the key.
Sweep load_sweep(const std::string& path, const std::vector<std::string>& cli_sets = {});

struct SweepRun {
  std::string variant;
  int64_t seed = 0;
  std::string run_dir;              // RUN_OUT/NAME/VARIANT/seed-S
  std::vector<Override> overrides;  // for load_config, in order: the sweep's set:, the variant's, --set, seed, folder
};

// Every run of the sweep, seed-major (all variants of the first seed first, so that a sweep cut short still
// compares every variant), with `cli_sets` ("key=value", from --set) applied last to each.
std::vector<SweepRun> sweep_runs(const Sweep& sweep, const std::vector<std::string>& cli_sets);

// The sweep's folder: RUN_OUT/NAME.
std::string sweep_dir(const Sweep& sweep, const std::vector<std::string>& cli_sets);

struct SweepOptions {
  std::vector<std::string> sets;  // --set, for every run
  int max_runs = 0;               // train at most this many runs in this call (0 = all); the rest wait for the next
  int64_t stop_at = -1;           // each run trained stops at this step with a checkpoint, as if interrupted
};

struct SweepSummary {
  std::string dir;
  int runs = 0;                  // in the sweep
  int done_before = 0;           // finished by an earlier call: not trained again
  int trained = 0, resumed = 0;  // fresh runs trained, interrupted runs resumed in this call
  int finished = 0;              // finished now, all calls together
  int interrupted_by = 0;        // signal that stopped the sweep, 0 if none
};

// Trains the sweep's runs in order: a finished run (its latest.pt at train.max_steps) is skipped, an interrupted
// one resumed, the others trained afresh. A stop signal ends the sweep after the current run's checkpoint.
// Writes RUN_OUT/NAME/sweep.json (the sweep file's text, the variants, the runs) first. Every run's config is
// resolved once, at the start: an edit of the base while the sweep trains reaches none of this call's runs, and a run
// trained by an earlier call with other settings than the files give it now (a key other than --set's and those
// says_how_a_run_runs names) is a poslab::Error naming the run and the keys, before anything is written.
SweepSummary run_sweep(const std::string& sweep_file, const SweepOptions& opt);

// The runs a sweep call still has to train from run `from` on, that one included (its ETA's count): those whose step
// (-1 where not started) is short of their max_steps, as many as max_runs (0: no limit) leaves after `trained_so_far`.
int runs_left_to_train(const std::vector<int64_t>& steps, const std::vector<int64_t>& max_steps, size_t from,
                       int max_runs, int trained_so_far);

// Whether a config key says how a run is carried out, not what it trains (run.* but its seed, data.cache_dir,
// train.cuda_graph: the same numbers either way): a sweep's runs may differ there between calls.
bool says_how_a_run_runs(const std::string& key);

}  // namespace poslab
