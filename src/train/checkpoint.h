// Self-describing checkpoints: model, optimizer, step, RNG states, effective config, tokenizer, format version.
#pragma once

#include <torch/torch.h>

#include <string>

#include "model/gpt.h"

namespace poslab {

inline constexpr int64_t kCheckpointFormat = 1;

struct CheckpointMeta {
  int64_t format_version = kCheckpointFormat;
  int64_t step = 0;         // optimizer updates done
  double train_loss = NAN;  // last estimate, NaN when unknown
  double val_loss = NAN;
  double best_val_loss = INFINITY;
  int64_t eval_step = -1;           // the step whose eval gave train_loss and val_loss (earlier than `step` in a run
                                    // stopped between evals); -1: no eval yet, or written before it was kept
  std::string config_yaml;          // effective config
  std::string tokenizer_model;      // sentencepiece .model bytes
  std::string corpus_hash;          // content hash of the training corpus; "" in checkpoints written before it was kept
  std::string sampler_state;        // BatchSampler generator state
  torch::Tensor torch_rng_state;    // default CPU generator state (dropout on the CPU)
  torch::Tensor cuda_rng_state;     // default CUDA generator state (dropout on the GPU); empty when trained on a CPU
                                    // or written before it was kept
  bool has_optimizer_state = true;  // false for weights only (poslab extend's): it cannot continue a run
};

// Writes atomically: PATH.tmp, fsync, rename. The previous file at `path` survives any failure.
void save_checkpoint(const std::string& path, GPT& model, torch::optim::Optimizer* optimizer,
                     const CheckpointMeta& meta);

// The model keys whose values make the checkpoint's tensors (n_layer, n_head, n_embd, block_size, bias, position)
// where `in_checkpoint` and `asked` differ: "model.n_embd 32 in the checkpoint vs 64, …"; "" when none do.
std::string architecture_difference(const ModelConfig& in_checkpoint, const ModelConfig& asked);

// The hint for a damaged checkpoint: the run's other one (latest.pt and best.pt name each other).
std::string damaged_checkpoint_hint(const std::string& path);

// Reads only the metadata. Throws poslab::Error naming the file when it is not a readable poslab checkpoint.
CheckpointMeta read_checkpoint_meta(const std::string& path);

// Throws poslab::Error naming `path` when its checkpoint holds no optimizer state (`meta` read from it): weights only
// start a run (--init-from), they cannot continue one.
void check_resumable(const CheckpointMeta& meta, const std::string& path);

// Loads weights (and optimizer state when given) into a model built from the checkpoint's config. Every tensor
// is read to the CPU and then moved to the model's device, so a checkpoint written on a GPU loads on a CPU.
// Throws poslab::Error naming what differs when the model's architecture does not match.
CheckpointMeta load_checkpoint(const std::string& path, GPT& model, torch::optim::Optimizer* optimizer);

// The position table wpe.weight of a checkpoint, (block_size, n_embd) as stored (float32), on the CPU, without
// building the model. Throws poslab::Error naming the file: not a poslab checkpoint, or no table
// (model.position = none).
torch::Tensor read_checkpoint_position_table(const std::string& path);

}  // namespace poslab
