// The start of a training run before any model: its config (fresh, --init-from or resumed) and its run folder.
// Internal to train/ (trainer.cpp calls these; train_config, trainer.h, is the public face of resolve_config), but
// for check_restart_loses_nothing, which the sweep calls too.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

#include "config/config.h"
#include "distributed/comm.h"
#include "run/run_folder.h"
#include "train/checkpoint.h"
#include "train/trainer.h"
#include "util/lock.h"

namespace poslab {

// The config of a fresh run (YAML + overrides), of a run from another's weights (--init-from: the config file, or
// the checkpoint's own config, then the overrides), or the stored config of the run being resumed (+ overrides),
// validated. Resuming, `resume_meta` receives the latest checkpoint's metadata; a run folder with no checkpoint
// but its config.yaml (a run stopped, or whose disk filled, before its first checkpoint) gives that config (+
// overrides): the run starts again in its folder.
Config resolve_config(const TrainRequest& req, CheckpointMeta& resume_meta);

// A new run from train.init_from's weights tokenizes with that checkpoint's tokenizer (the vocabulary of its
// weights): `cfg` takes the checkpoint's data.tokenizer keys, so that config.yaml records the tokenizer the run
// uses. Returns a warning for each tokenizer key the config or --set gave otherwise (it is not read); none without
// train.init_from.
std::vector<std::string> take_init_from_tokenizer(Config& cfg);

// Whether --resume names a run folder with no checkpoint yet but its config: the run starts again there.
bool restarts_in_place(const TrainRequest& req);

// What a resume cannot change, the checkpoint having fixed it when the run began: run.seed, data.val_fraction and
// data.tokenizer.* (config.yaml would record a value the run does not use), the model's architecture and whether
// train.position_lr_scale is 1 (the optimizer state's groups). `stored` is the checkpoint's config (`latest` names
// it), `requested` the one with the overrides. Throws poslab::Error naming the key, both values and how to train
// with the new value. A sweep asks it of each started run, finished or not.
void check_resume_keeps_its_start(const std::string& latest, const Config& stored, const Config& requested);

// A run folder without its latest checkpoint starts again from step 0 (a run stopped before its step-0
// checkpoint), unless it logged a later step: then checkpoints/latest.pt was written and is lost (deleted, moved),
// and a restart would overwrite what the run wrote since. Throws poslab::Error naming the folder, the last step
// logged and how to go on from best.pt where there is one; nothing is changed.
void check_restart_loses_nothing(const RunFolder& run);

// Every data.corpus path exists: checked before the run folder is made (the corpus is read after). Throws
// poslab::Error naming the path and where data.corpus was set.
void check_corpus_paths(const Config& cfg);

// The paths a new run's config names are there: data.corpus's (check_corpus_paths) and train.init_from's checkpoint.
// What poslab config checks beside the values; throws poslab::Error naming the key and where it was set.
void check_config_paths(const Config& cfg);

// A resumed run's train.max_steps (lowered by --set) below the step its checkpoint holds: an error naming both, before
// anything is written (its logs would be cut back and its config rewritten, with nothing to train).
void check_resumed_max_steps(const TrainRequest& req, const Config& cfg, const CheckpointMeta& resume_meta,
                             bool resuming);

// --stop-at (TrainRequest::stop_at) names a step the run reaches: a resumed run already at or past it is an error
// naming both steps (it would have trained to the end); a step past train.max_steps is said (the run ends there).
void check_stop_at(const TrainRequest& req, const Config& cfg, const CheckpointMeta& resume_meta, bool resuming);

// Rank 0 alone owns the run folder: it checks the folder is free (unless `resuming`), takes its lock (returned:
// one trainer per folder until it is released), makes the folders, removes interrupted writes and writes config.yaml
// where `write_config` (a resume's is written by TrainingRun::resume once its checkpoint and logs are read). Its
// verdict reaches every rank, so that a taken folder stops them all with rank 0's error; the others only read the
// folder later.
std::unique_ptr<RunLock> set_up_run_folder(const std::string& rdir, const Config& cfg, bool resuming, bool write_config,
                                           Comm& comm, const torch::Device& device);

}  // namespace poslab
