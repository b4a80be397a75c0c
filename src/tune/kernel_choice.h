// A training run's CPU kernel paths (util/kernel_paths.h): kept from its start, chosen, or taken from rank 0.
// Internal to train/: the trainer calls it once its model and batch split exist.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

#include "config/config.h"
#include "distributed/comm.h"
#include "model/batch_split.h"
#include "model/gpt.h"

namespace poslab {

// A resumed run goes on with the paths it started with (unless POSLAB_KERNELS says otherwise); a new run chooses
// them (measured, cached or forced: tune/autotune.h) and records them in the run folder `rdir`. With many
// processes rank 0 chooses and the others read its record. Sets kernel_paths(); `split` is made whole (one way)
// when batch_split=none was chosen.
void choose_run_kernel_paths(const std::string& rdir, bool resuming, const Config& cfg, GPT& model,
                             std::unique_ptr<BatchSplit>& split, const torch::Device& device, int threads, Comm& comm);

}  // namespace poslab
