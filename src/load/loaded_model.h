// A trained model back from its checkpoint: config, tokenizer, weights, ready for inspect / sample / eval.
#pragma once

#include <string>

#include "config/config.h"
#include "data/tokenizer.h"
#include "model/gpt.h"
#include "train/checkpoint.h"

namespace poslab {

struct LoadedModel {
  Config cfg;           // the effective config the model was trained with
  Tokenizer tokenizer;  // from the checkpoint itself
  GPT model{nullptr};   // in eval mode, on the device asked for
  CheckpointMeta meta;
};

// Reads every tensor to the CPU, then moves the model to `device` (a GPU's checkpoint opens on a CPU and back).
// Throws poslab::Error naming the file for anything that is not a readable poslab checkpoint.
LoadedModel load_model(const std::string& checkpoint_path, const torch::Device& device = torch::kCPU);

// The model as training started it, on the CPU: LibTorch's generator seeded with run.seed, then the model built
// from the config, as the trainer does (its step-0 snapshot is this model's table). For a run started from
// train.init_from, the weights of that checkpoint instead (loaded from where the config says it is).
GPT initial_model(const LoadedModel& m);

}  // namespace poslab
