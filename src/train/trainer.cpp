// The training loop: set lr -> maybe eval / snapshot / checkpoint -> update -> log; and train(), which sets up a run
// (run_setup.h), builds it (run_start.cpp) and runs the loop.
#include "train/trainer.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "analysis/metric_list.h"
#include "config/config.h"
#include "distributed/comm.h"
#include "distributed/env.h"
#include "run/run_files.h"
#include "run/run_folder.h"
#include "train/checkpoint.h"
#include "train/evaluate.h"
#include "train/memory_need.h"
#include "train/optim.h"
#include "train/run_setup.h"
#include "train/schedule.h"
#include "train/snapshot.h"
#include "train/step_graph.h"
#include "train/training_run.h"
#include "util/cuda.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_text.h"
#include "util/kernel_paths.h"
#include "util/lock.h"
#include "util/platform.h"
#include "util/plural.h"
#include "util/shell.h"
#include "util/signals.h"

namespace poslab {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string human_rate(double tokens_per_s) {
  if (tokens_per_s >= 1e6) return fmt::format("{:.2f}M", tokens_per_s / 1e6);
  return tokens_per_s >= 1000 ? fmt::format("{:.1f}k", tokens_per_s / 1000) : fmt::format("{:.0f}", tokens_per_s);
}

}  // namespace

TrainSummary TrainingRun::loop() {
  model_->train();
  Progress progress(start_step_, cfg_.train.max_steps, writer_);
  progress_ = &progress;
  for (int64_t step = start_step_; step <= cfg_.train.max_steps; ++step) {
    comm_.set_step(step);
    const bool last = step == cfg_.train.max_steps;
    const bool on_disk = resuming_ && step == start_step_;  // its eval, snapshot and checkpoint are on disk
    const double lr = lr_at(static_cast<int>(step), cfg_.train);
    nlohmann::json record = {{"step", step}, {"lr", lr}};
    if (step % cfg_.train.eval_every == 0 || last) {
      if (!on_disk) {
        evaluate(step, record);
      } else {  // the checkpoint holds this step's estimates: its record is written again, as it was
        record["train_loss"] = train_est_;
        record["val_loss"] = val_est_;
      }
    }
    const bool stop = stop_agreed();
    if (!on_disk && model_->wpe && (step % cfg_.snapshot.every == 0 || last || stop)) {
      settle_unread();  // as before a checkpoint
      if (writer_) snapshot(step, record);
    }
    // A resumed run goes on from its checkpoint's step; a new one may stop at step 0, after its first checkpoint.
    const bool stop_here = (step == req_.stop_at || stop) && (step > start_step_ || !resuming_);
    // The run's last record goes to disk before its last checkpoint: a checkpoint at train.max_steps (which a sweep
    // takes for a finished run) then never stands without it. A crash between the two leaves the checkpoint before,
    // whose resume cuts the record and writes it again.
    if ((last || stop_here) && writer_ && record.contains("val_loss")) write_record(record);
    if (!on_disk && (step % cfg_.train.checkpoint_every == 0 || last || stop_here)) {  // step 0 too
      settle_unread();  // on every rank: no checkpoint holds a step that train.on_nonfinite: stop stops at
      if (writer_) {
        sync_logs();
        save_checkpoint(latest_path(), model_, optimizer_.get(), meta(step));
      }
    }
    if (last || stop_here) {
      finished_at_ = step;
      break;
    }
    update(step, lr, record);
    progress.update(step + 1);
  }
  progress.clear();
  progress_ = nullptr;
  return finish();
}

// Train and val loss on the fixed eval windows; a new best val loss writes best.pt.
void TrainingRun::evaluate(int64_t step, nlohmann::json& record) {
  settle_unread();
  const bool bf16 = cfg_.train.dtype == "bfloat16";
  // Each rank scores its shard of the same windows; the parts add up to the estimates on every rank.
  // On the CPU through the batch split: its slices in parallel threads, as training runs them.
  auto estimate = [&](const std::vector<int32_t>& tokens, const char* split) {
    return estimate_loss(model_, tokens, cfg_.train.eval_batches, cfg_.train.batch_size,
                         eval_seed(cfg_.run.seed, split), bf16, device_, comm_.shard(), split_.get());
  };
  auto parts = torch::tensor({estimate(data_.train, "train"), estimate(data_.val, "val")},
                             torch::TensorOptions().dtype(torch::kFloat64).device(device_));
  comm_.sum_({parts}, "the evaluation's loss sum");
  parts = parts.to(torch::kCPU);
  train_est_ = parts[0].item<double>();
  val_est_ = parts[1].item<double>();
  eval_step_ = step;
  record["train_loss"] = train_est_;
  record["val_loss"] = val_est_;
  progress_->clear();
  spdlog::info("eval step {} | train {:.4f} | val {:.4f}", step, train_est_, val_est_);
  if (val_est_ < best_val_) {
    best_val_ = val_est_;
    if (writer_) {
      sync_logs();  // best.pt stands in for a lost latest.pt (docs/faults.md): the lines before it on disk too
      save_checkpoint(best_path(), model_, optimizer_.get(), meta(step));
    }
  }
}

// The position table as .npy with its analysis; a failed analysis is logged, never ends the run.
void TrainingRun::snapshot(int64_t step, const nlohmann::json& record) {
  const auto t0 = Clock::now();
  // train loss: the eval estimate at eval steps, else the last training batch's loss.
  const bool evaluated = record.contains("val_loss");
  const double train_loss = evaluated ? train_est_ : last_batch_loss_.defined() ? last_batch_loss_.item<double>() : NAN;
  // Its files are the run's as a checkpoint is: one that cannot be written stops the run (a resume writes it again);
  // a failed analysis is said in the log line and the run goes on.
  std::optional<Analysis> analysis;
  // layer 0's attention on real text: a few of the val eval's windows, the same at every snapshot
  const UsageWindows windows{&data_.val, std::min(cfg_.train.eval_batches, 4), cfg_.train.batch_size,
                             eval_seed(cfg_.run.seed, "val")};
  std::string summary;
  try {
    summary = write_snapshot(rdir_, step, model_, train_loss, evaluated ? val_est_ : NAN, &windows, &analysis);
    if (tensorboard_) {  // the table for the projector, and its headline metrics
      const auto w = model_->position_table().detach().to(torch::kCPU, torch::kFloat32).contiguous();
      tensorboard_->add_table(step, w.data_ptr<float>(), w.size(0), w.size(1));
      std::vector<TbScalar> scalars;
      if (analysis)
        for (const Metric& m : headline_metrics()) scalars.push_back({step, table_tag(m.key), m.value(*analysis)});
      tensorboard_->add(scalars);
    }
  } catch (const Error& e) {
    stopped_by(e);
  }
  const double ms = 1000.0 * seconds_since(t0);
  progress_->clear();
  snapshot_seconds_ += ms / 1000.0;
  // its cost in training steps' time (a step's mean so far)
  const double steps = train_steps_run_ > 0 ? ms / (1000.0 * train_seconds_ / train_steps_run_) : 0;
  const std::string cost = train_steps_run_ > 0
                               ? fmt::format(steps < 10 ? ", {:.1f}× a step's time" : ", {:.0f}× a step's time", steps)
                               : "";
  spdlog::info("snapshot step {} | {} | analysis {:.1f} ms{}", step, summary, ms, cost);
}

// One optimizer update (grad_accum micro-batches, clip, AdamW), then its log line and metrics record.
void TrainingRun::update(int64_t step, double lr, nlohmann::json& record) {
  const auto t0 = Clock::now();
  const double comm_before = comm_.seconds();
  const StepResult result = graph_ ? graph_->step(*sampler_, lr)
                                   : train_step(model_, *optimizer_, *sampler_, cfg_.train, lr, device_, split_.get(),
                                                comm_.size() > 1 ? &comm_ : nullptr);
  stop_seen_ = stop_seen_ || result.stop;
  interval_comm_seconds_ += comm_.seconds() - comm_before;
  step_comm_seconds_ += comm_.seconds() - comm_before;
  last_batch_loss_ = result.loss;
  const bool logs = step % cfg_.train.log_every == 0 || record.contains("val_loss");
  if (result.unread) {  // the step was queued on the device: its skip is counted there, read at the next log
    unread_skips_ = unread_skips_.defined() ? unread_skips_ + result.device_skipped : result.device_skipped;
    if (unread_from_ < 0) unread_from_ = step;
    unread_to_ = step;
    if (logs) settle_unread();  // waits for the device: the interval's time is then its steps' own
  } else if (!result.finite) {
    handle_nonfinite(step, result);
  }
  const double dt = seconds_since(t0);
  train_seconds_ += dt;
  interval_seconds_ += dt;
  ++interval_steps_;
  ++train_steps_run_;
  if (logs) log_step(step, lr, record);
}

// train.on_nonfinite: stop (the last checkpoint stays) or skip the step and count it.
void TrainingRun::handle_nonfinite(int64_t step, const StepResult& result) {
  ++skipped_steps_;
  progress_->clear();
  const auto number = [](double v) { return std::isnan(v) ? std::string("NaN") : fmt::format("{}", v); };  // no -nan
  const std::string what = fmt::format("step {}: non-finite loss or gradient (loss {}, grad norm {})", step,
                                       number(result.loss.item<double>()), number(result.grad_norm));
  if (cfg_.train.on_nonfinite == "stop")
    throw Error(rdir_ + ": " + what + "; the run stopped, " + latest_path() + " holds the last good checkpoint",
                "lower train.lr, keep train.grad_clip on, or set train.on_nonfinite: skip; then resume with "
                "poslab train --resume " +
                    rdir_);
  spdlog::warn("{}: skipped ({} skipped so far)", what, skipped_steps_);
}

void TrainingRun::settle_unread() {
  if (!unread_skips_.defined()) return;
  const auto skipped = static_cast<int64_t>(unread_skips_.item<float>());  // waits for the queued steps
  const int64_t from = unread_from_, to = unread_to_;
  unread_skips_ = torch::Tensor();
  unread_from_ = unread_to_ = -1;
  if (skipped == 0) return;
  skipped_steps_ += skipped;
  progress_->clear();
  const std::string what = fmt::format(
      "{} of steps {}-{}: non-finite loss or gradient, the update skipped on the "
      "device",
      skipped, from, to);
  if (cfg_.train.on_nonfinite == "stop")
    throw Error(rdir_ + ": " + what + "; the run stopped, " + latest_path() + " holds the last good checkpoint",
                "lower train.lr, keep train.grad_clip on, or set train.on_nonfinite: skip; then resume with "
                "poslab train --resume " +
                    rdir_);
  spdlog::warn("{} ({} skipped so far)", what, skipped_steps_);
}

void TrainingRun::log_step(int64_t step, double lr, nlohmann::json& record) {
  const double loss = last_batch_loss_.item<double>();
  const double tok_s = static_cast<double>(interval_steps_ * tokens_per_step()) / interval_seconds_;
  record["loss"] = loss;
  record["tokens_per_s"] = tok_s;
  record["ms_per_step"] = 1000.0 * interval_seconds_ / interval_steps_;
  if (comm_.size() > 1) record["allreduce_ms_per_step"] = 1000.0 * interval_comm_seconds_ / interval_steps_;
  if (writer_) write_record(record);
  if (step % cfg_.train.log_every != 0) return;
  progress_->clear();
  spdlog::info("step {} | loss {:.4f} | lr {:.1e} | {:.1f} ms | {} tok/s{}", step, loss, lr,
               1000.0 * interval_seconds_ / interval_steps_, human_rate(tok_s),
               comm_.size() > 1
                   ? fmt::format(" | all-reduce {:.1f} ms", 1000.0 * interval_comm_seconds_ / interval_steps_)
                   : "");
  interval_seconds_ = 0.0;
  interval_comm_seconds_ = 0.0;
  interval_steps_ = 0;
}

void TrainingRun::write_record(const nlohmann::json& record) {
  try {
    append_line(metrics_path(), json_text(record));
    if (tensorboard_) tensorboard_->add(metrics_scalars(metrics_record(record)));
  } catch (const Error& e) {
    stopped_by(e);
  }
}

// A resume keeps the lines before its checkpoint's step and never writes them again: they must outlive a power loss
// that the checkpoint outlives (a kill leaves them in the page cache).
void TrainingRun::sync_logs() const {
  try {
    sync_appended(metrics_path());
    if (model_->wpe) sync_appended(RunFolder(rdir_).snapshot_index());
    if (tensorboard_) sync_appended(tensorboard_->events_path());
  } catch (const Error& e) {  // the checkpoint is not written over lines that may not be on disk
    stopped_by(e);
  }
}

void TrainingRun::stopped_by(const Error& e) const {
  std::error_code ec;
  const bool kept = std::filesystem::exists(latest_path(), ec);
  throw Error(e.what(),
              "fix what stopped the write (free space, permissions; dmesg for a failing disk), then poslab "
              "train --resume " +
                  shell_word(rdir_) +
                  (kept ? ": the previous checkpoint is intact, and the run goes on from it"
                        : ": no checkpoint was written yet, so the run starts again in its folder"));
}

// The summary of the run and its log lines (the caller writes the report: TrainSummary::report_due).
TrainSummary TrainingRun::finish() {
  settle_unread();
  TrainSummary s;
  s.run_dir = rdir_;
  s.steps = finished_at_;
  s.finished = finished_at_ >= cfg_.train.max_steps;
  s.report_due = writer_ && cfg_.run.report && s.finished && model_->wpe;
  s.train_loss = train_est_;
  s.val_loss = val_est_;
  s.eval_step = eval_step_;
  s.tokens_per_s =
      train_seconds_ > 0 ? static_cast<double>(train_steps_run_ * tokens_per_step()) / train_seconds_ : 0.0;
  s.interrupted_by = stop_signal();
  s.skipped_steps = skipped_steps_;
  if (skipped_steps_ > 0)
    spdlog::warn("{} skipped for non-finite loss or gradient",
                 skipped_steps_ == 1 ? "1 step was" : counted(skipped_steps_, "step") + " were");
  if (!s.finished)
    spdlog::info("stopped at step {}{}: continue with poslab train --resume {}", finished_at_,
                 s.interrupted_by ? fmt::format(" by signal {}", s.interrupted_by) : "", shell_word(rdir_));
  if (train_seconds_ > 0)
    spdlog::info("snapshots with their analysis took {:.2f} s; the training steps {:.2f} s", snapshot_seconds_,
                 train_seconds_);
  s.world_size = comm_.size();
  s.allreduce_seconds = step_comm_seconds_;
  s.train_seconds = train_seconds_;
  if (comm_.size() > 1 && train_steps_run_ > 0)
    spdlog::info(
        "{} processes ({} backend) | gradient all-reduce {:.2f} s = {:.1f} ms per step = {:.1f}% of the "
        "training time (waits for the slowest rank included)",
        comm_.size(), comm_.backend(), step_comm_seconds_, 1000.0 * step_comm_seconds_ / train_steps_run_,
        100.0 * step_comm_seconds_ / train_seconds_);
  return s;
}

TrainSummary train(const TrainRequest& req) {
  const auto wall_start = Clock::now();
  const DistEnv env = read_dist_env();
  CheckpointMeta resume_meta;
  Config cfg = resolve_config(req, resume_meta);
  // a new run from another's weights, or one started again in its folder: the tokenizer of those weights
  const std::vector<std::string> unread_tokenizer =
      req.resume_dir.empty() || restarts_in_place(req) ? take_init_from_tokenizer(cfg) : std::vector<std::string>{};
  check_divides("train.batch_size", cfg.train.batch_size, env.world_size, origin_prefix(cfg, "train.batch_size"));
  // train.dtype auto becomes what this machine runs, and is stored so: a resumed run keeps its dtype.
  const std::string asked_dtype = cfg.train.dtype;
  const std::string device_name = resolve_device(cfg.run.device);
  cfg.train.dtype = resolve_dtype(cfg.train.dtype, device_name);
  // the run's log names where `auto` was asked, beside what it became ("bfloat16 (auto in configs/default.yaml)")
  if (asked_dtype == "auto") cfg.origin["train.dtype"] = "auto in " + origin_words(cfg, "train.dtype");
  torch::Device device(torch::kCPU);
  if (device_name == "cuda") {  // one GPU per process: the LOCAL_RANK-th of this machine
    use_cuda_device(env.local_rank);
    device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
  }
  const int threads = apply_threads(cfg.run.threads, env.local_world_size, env.local_rank == 0);
  // Before anything is written: a model that cannot fit in this process's memory, or in its GPU's free memory,
  // stops here.
  check_training_fits(cfg, cfg.data.tokenizer.type == "char" ? 256 : cfg.data.tokenizer.vocab_size, env.world_size,
                      device.is_cuda() ? cuda_memory_room() : memory_room(env.local_world_size), device.is_cuda());
  adamw_on_device(cfg.train, device);             // train.adamw fused where it cannot run stops here too
  check_cuda_graph(cfg, device, env.world_size);  // and train.cuda_graph
  // --resume of a folder whose run wrote no checkpoint: it starts again there, from step 0, its logs emptied.
  const bool restart = restarts_in_place(req);
  const bool resuming = !req.resume_dir.empty() && !restart;
  check_resumed_max_steps(req, cfg, resume_meta, resuming);
  check_stop_at(req, cfg, resume_meta, resuming);
  // what the config does not do, said when it is about to train (not by a resume of a finished run)
  if (env.rank == 0 && !(resuming && resume_meta.step >= cfg.train.max_steps)) {
    if (const std::string w = schedule_warning(cfg.train); !w.empty()) spdlog::warn("{}", w);
    if (resuming) {
      const Config stored = config_from_yaml(resume_meta.config_yaml, req.resume_dir + " (stored config)");
      if (const std::string w = resumed_schedule_warning(stored.train, cfg.train, resume_meta.step); !w.empty())
        spdlog::warn("{}", w);
    }
    for (const std::string& w : unread_settings(cfg)) spdlog::warn("{}", w);
    for (const std::string& w : unread_tokenizer) spdlog::warn("{}", w);
  }
  check_corpus_paths(cfg);
  check_kernels_env();  // read when the run starts; checked before its folder
  const std::string rdir = req.resume_dir.empty() ? run_dir(cfg) : req.resume_dir;
  const std::vector<std::string> made = req.resume_dir.empty() ? missing_folders(rdir) : std::vector<std::string>{};
  std::vector<std::string> there_before;  // a new run's folder that was there: what of a run's it held (empty folders)
  if (req.resume_dir.empty())
    for (const std::string& p : RunFolder(rdir).entries_a_run_writes())
      if (std::error_code ec; std::filesystem::exists(p, ec)) there_before.push_back(p);
  Comm comm(env, device, std::chrono::seconds(cfg.run.dist_timeout_s));
  // held to the end; a resume's config.yaml is written once its checkpoint and logs are read (TrainingRun::resume)
  std::unique_ptr<RunLock> lock = set_up_run_folder(rdir, cfg, resuming || restart, !resuming, comm, device);
  if (restart && comm.is_main()) {
    spdlog::warn("{} holds no checkpoint: the run starts again in its folder, from step 0", rdir);
    truncate_logs_after(RunFolder(rdir), -1);
  }
  TrainRequest fresh = req;  // what TrainingRun reads: resuming or not
  if (restart) fresh.resume_dir.clear();

  if (asked_dtype == "auto")
    spdlog::info("train.dtype auto: {}{}", cfg.train.dtype,
                 cfg.train.dtype == "float32"
                     ? " (this CPU has no AVX512-BF16 or AMX: bf16 products would run in float, no faster than float32)"
                     : "");
  // A new run whose start poslab refuses (no text in the corpus, a tokenizer it cannot train) trained nothing: the run
  // folder it made goes again, with the folders above it that it made and nobody has filled since, and the same
  // command runs once the input is fixed. A start that runs out of memory keeps its folder, which --resume starts
  // again with a smaller model, as its hint says.
  std::unique_ptr<TrainingRun> run;
  try {
    run = std::make_unique<TrainingRun>(fresh, cfg, rdir, device, threads, comm, resume_meta);
  } catch (const Error&) {
    if (comm.is_main() && !made.empty()) {
      lock.reset();
      if (!remove_made_folders(made)) spdlog::warn("{}: the refused start's folder could not be removed", rdir);
    } else if (comm.is_main() && req.resume_dir.empty()) {  // a folder that was there, free (check_folder_is_free)
      std::error_code ec;  // what the start wrote goes, the lock still held; a folder that was there stays, empty
      for (const std::string& p : RunFolder(rdir).entries_a_run_writes()) {
        if (std::find(there_before.begin(), there_before.end(), p) == there_before.end()) {
          std::filesystem::remove_all(p, ec);
          continue;
        }
        std::vector<std::filesystem::path> inside;
        for (std::filesystem::directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec))
          inside.push_back(it->path());
        for (const auto& q : inside) std::filesystem::remove_all(q, ec);
      }
      lock.reset();
    }
    throw;
  }
  TrainSummary s = run->loop();
  s.seconds = seconds_since(wall_start);
  // A resume of a finished run trains no step: no rate to give.
  // A run stopped between evals names the step its losses come from.
  spdlog::info(
      "done: {} steps | {}train {:.4f} | val {:.4f} | {:.1f} s wall | {} | {}", s.steps,
      s.eval_step >= 0 && s.eval_step != s.steps ? fmt::format("the eval of step {}: ", s.eval_step) : "", s.train_loss,
      s.val_loss, s.seconds,
      s.tokens_per_s > 0 ? human_rate(s.tokens_per_s) + " tok/s in the steps" : std::string("no step to train"),
      RunFolder(rdir).latest_checkpoint());
  return s;
}

}  // namespace poslab
