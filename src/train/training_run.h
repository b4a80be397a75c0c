// One training run: what it is made of, and the side effects of its loop as named steps. "Step s" = the weights
// after s updates; eval, snapshot and checkpoint look at them before the update s -> s + 1.
// Internal to train/: run_start.cpp builds a run (data, model, resumed state), trainer.cpp runs its loop.
#pragma once

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "config/config.h"
#include "data/batches.h"
#include "data/dataset.h"
#include "distributed/comm.h"
#include "model/gpt.h"
#include "run/run_folder.h"
#include "run/tensorboard_files.h"
#include "train/checkpoint.h"
#include "train/optim.h"
#include "train/progress.h"
#include "train/step.h"
#include "train/step_graph.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/signals.h"

namespace poslab {

class TrainingRun {
 public:
  // Rank 0 of `comm` writes the run folder; every rank trains (data parallel). One process: comm of size 1.
  TrainingRun(const TrainRequest& req, Config cfg, std::string rdir, torch::Device device, int threads, Comm& comm,
              const CheckpointMeta& resume_meta);

  TrainSummary loop();

 private:
  std::string latest_path() const { return RunFolder(rdir_).latest_checkpoint(); }
  std::string best_path() const { return RunFolder(rdir_).best_checkpoint(); }
  std::string metrics_path() const { return RunFolder(rdir_).metrics(); }
  int64_t tokens_per_step() const {  // of the whole run, all ranks together
    return static_cast<int64_t>(cfg_.train.batch_size) * cfg_.train.grad_accum * cfg_.model.block_size;
  }
  // A stop request (signal) that every rank acts on at the same step: one process reads its own flag; many
  // processes read the flag summed with the last update's gradients.
  bool stop_agreed() const { return comm_.size() == 1 ? stop_requested() : stop_seen_; }

  // The start (run_start.cpp).
  void log_machine(const CheckpointMeta& resume_meta) const;
  void load_data(const CheckpointMeta& resume_meta);
  void load_tokens(const CheckpointMeta& resume_meta);
  void build_model();
  void init_from(const std::string& path);
  void resume();
  CheckpointMeta meta(int64_t step) const;

  // The loop's steps (trainer.cpp).
  void evaluate(int64_t step, nlohmann::json& record);
  void snapshot(int64_t step, const nlohmann::json& record);
  void update(int64_t step, double lr, nlohmann::json& record);
  void handle_nonfinite(int64_t step, const StepResult& result);
  void settle_unread();  // reads the skips of the steps on the device since the last read (train.on_nonfinite)
  void log_step(int64_t step, double lr, nlohmann::json& record);
  void write_record(const nlohmann::json& record);  // to metrics.jsonl, and its scalars to TensorBoard
  // A file of the run that could not be written (a full disk, a file-size limit): `e` again, its hint saying what a
  // resume finds on disk.
  [[noreturn]] void stopped_by(const Error& e) const;
  void sync_logs() const;  // the logs' lines so far on disk, before the checkpoint that stands for them
  TrainSummary finish();

  const TrainRequest& req_;
  const Config cfg_;
  const std::string rdir_;
  const bool resuming_;
  const int threads_;
  const torch::Device device_;
  Comm& comm_;
  const bool writer_;  // rank 0: the only one that writes the run folder
  TokenData data_;
  GPT model_{nullptr};
  std::unique_ptr<DeviceAdamW> optimizer_;
  std::unique_ptr<BatchSampler> sampler_;
  std::unique_ptr<BatchSplit> split_;
  std::unique_ptr<StepGraph> graph_;             // train.cuda_graph
  std::unique_ptr<TensorboardLog> tensorboard_;  // rank 0 with run.tensorboard
  Progress* progress_ = nullptr;                 // the loop's progress bar, while the loop runs

  int64_t start_step_ = 0, finished_at_ = 0;
  double best_val_ = INFINITY;
  double train_est_ = NAN, val_est_ = NAN;     // the last eval's estimates
  int64_t eval_step_ = -1;                     // and its step (-1: none yet)
  torch::Tensor last_batch_loss_;              // loss of the last update's batch, read only when needed
  int64_t skipped_steps_ = 0;                  // non-finite steps skipped (train.on_nonfinite: skip)
  torch::Tensor unread_skips_;                 // steps on the device: how many skipped since the last read (0-dim)
  int64_t unread_from_ = -1, unread_to_ = -1;  // ... among these steps
  double train_seconds_ = 0.0;                 // time in training steps only
  double snapshot_seconds_ = 0.0;              // time writing and analysing snapshots
  double interval_seconds_ = 0.0;              // since the last log line
  double interval_comm_seconds_ = 0.0;         // of which in the gradient all-reduce
  double step_comm_seconds_ = 0.0;             // in the gradient all-reduce, all steps
  bool stop_seen_ = false;                     // some rank had a stop request (many processes)
  int64_t interval_steps_ = 0;
  int64_t train_steps_run_ = 0;
};

}  // namespace poslab
