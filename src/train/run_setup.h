// The start of a training run before any model: its config (fresh, --init-from or resumed) and its run folder.
// Internal to train/: trainer.cpp calls these; train_config (trainer.h) is the public face of resolve_config.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

#include "config/config.h"
#include "distributed/comm.h"
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

// Whether --resume names a run folder with no checkpoint yet but its config: the run starts again there.
bool restarts_in_place(const TrainRequest& req);

// Rank 0 alone owns the run folder: it checks the folder is free (unless `resuming`), takes its lock (returned:
// one trainer per folder until it is released), makes the folders, removes interrupted writes and writes
// config.yaml. Its verdict reaches every rank, so that a taken folder stops them all with rank 0's error; the
// others only read the folder later.
std::unique_ptr<RunLock> set_up_run_folder(const std::string& rdir, const Config& cfg, bool resuming, Comm& comm,
                                           const torch::Device& device);

}  // namespace poslab
