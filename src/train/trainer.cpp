#include "train/trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <filesystem>

#include "config/config.h"
#include "data/batches.h"
#include "data/dataset.h"
#include "model/gpt.h"
#include "report/report.h"
#include "train/checkpoint.h"
#include "train/evaluate.h"
#include "train/optim.h"
#include "train/progress.h"
#include "train/schedule.h"
#include "train/snapshot.h"
#include "train/step.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/lock.h"
#include "util/platform.h"
#include "util/signals.h"

namespace poslab {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

torch::Tensor cpu_rng_state() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_cpu_rng_state(const torch::Tensor& state) {
  if (!state.defined() || state.numel() == 0) return;
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

std::string human_rate(double tokens_per_s) {
  return tokens_per_s >= 1000 ? fmt::format("{:.1f}k", tokens_per_s / 1000) : fmt::format("{:.0f}", tokens_per_s);
}

}  // namespace

TrainSummary train(const TrainRequest& req) {
  const auto wall_start = Clock::now();

  // 1. Config: a fresh run from YAML, or the stored config of the run being resumed.
  Config cfg;
  std::string rdir;
  CheckpointMeta resume_meta;
  const bool resuming = !req.resume_dir.empty();
  if (resuming) {
    const std::string latest = (fs::path(req.resume_dir) / "checkpoints" / "latest.pt").string();
    resume_meta = read_checkpoint_meta(latest);
    cfg = config_from_yaml(resume_meta.config_yaml, latest + " (stored config)");
    for (const auto& o : req.overrides) apply_override(cfg, o);
    validate(cfg);
    rdir = req.resume_dir;
  } else {
    cfg = load_config(req.config_path, req.overrides);
    rdir = run_dir(cfg);
  }
  if (!resuming) {
    // Never mix two runs in one folder, never overwrite a run's files.
    for (const char* f : {"checkpoints/latest.pt", "metrics.jsonl", "snapshots/index.jsonl"}) {
      std::error_code ec;
      if (fs::exists(fs::path(rdir) / f, ec))
        throw Error(rdir + ": already holds a run (" + f + ")",
                    "continue it with poslab train --resume " + rdir + ", or pick another --set run.name=NAME");
    }
  }
  make_dirs(rdir);
  const RunLock lock(rdir);  // one trainer per run folder, released when train() returns or throws
  make_dirs((fs::path(rdir) / "checkpoints").string());
  // A trainer killed while writing leaves its temporary file; with the lock held, no writer is running.
  int stale = 0;
  for (const char* sub : {"checkpoints", "snapshots", "report", ""}) stale += remove_stale_temporaries((fs::path(rdir) / sub).string());
  if (stale > 0) spdlog::warn("removed {} temporary file{} left by an interrupted write", stale, stale == 1 ? "" : "s");
  write_file_atomic((fs::path(rdir) / "config.yaml").string(), to_yaml(cfg));

  // 2. Machine: BLAS, threads, device.
  const int threads = apply_threads(cfg.run.threads);
  const std::string device_name = resolve_device(cfg.run.device);
  const torch::Device device(device_name == "cuda" ? torch::kCUDA : torch::kCPU);
  spdlog::info("BLAS: {}", blas_summary());
  spdlog::info("threads: {} (LibTorch intra-op), {} (OpenBLAS) | device: {} | dtype: {}", threads, blas_threads(),
               device_name, cfg.train.dtype);
  spdlog::info("run folder {}{}", rdir, resuming ? fmt::format(" (resuming from step {})", resume_meta.step) : "");
  spdlog::info("effective config:\n{}", to_yaml(cfg));
  torch::manual_seed(static_cast<uint64_t>(cfg.run.seed));

  // 3. Data.
  TokenData data = prepare_tokens(cfg, threads);
  if (resuming && data.tokenizer.model_bytes() != resume_meta.tokenizer_model)
    throw Error(req.resume_dir + ": the corpus or tokenizer changed since the checkpoint was written",
                "restore the original data.corpus, or start a new run");
  const int64_t vocab = data.tokenizer.vocab_size();
  spdlog::info("data: vocab {} | train {} tokens | val {} tokens", vocab, data.train.size(), data.val.size());

  // 4. Model and optimizer.
  GPT model(cfg.model, vocab);
  model->to(device);
  auto optimizer = make_optimizer(model, cfg.train);
  spdlog::info("model: {:.2f}M parameters ({:.2f}M without the position table) | position: {}",
               model->num_params() / 1e6, model->num_params(false) / 1e6, cfg.model.position);

  BatchSampler sampler(data.train, cfg.train.batch_size, cfg.model.block_size, static_cast<uint64_t>(cfg.run.seed));
  BatchSplit split(model, batch_split_ways(cfg, threads, device));
  spdlog::info("batch split: {} way{} (run.batch_split: {})", split.ways(), split.ways() == 1 ? "" : "s",
               cfg.run.batch_split == 0 ? "auto" : std::to_string(cfg.run.batch_split));
  const std::string latest_path = (fs::path(rdir) / "checkpoints" / "latest.pt").string();
  const std::string best_path = (fs::path(rdir) / "checkpoints" / "best.pt").string();
  const std::string metrics_path = (fs::path(rdir) / "metrics.jsonl").string();
  int64_t start_step = 0;
  double best_val = INFINITY;
  double last_train_est = NAN, last_val_est = NAN;
  if (resuming) {
    resume_meta = load_checkpoint(latest_path, model, optimizer.get());
    sampler.set_state(resume_meta.sampler_state);
    set_cpu_rng_state(resume_meta.torch_rng_state);
    start_step = resume_meta.step;
    best_val = resume_meta.best_val_loss;
    last_train_est = resume_meta.train_loss;
    last_val_est = resume_meta.val_loss;
    truncate_jsonl_after(metrics_path, start_step);
    truncate_jsonl_after((fs::path(rdir) / "snapshots" / "index.jsonl").string(), start_step);
    if (start_step >= cfg.train.max_steps)
      spdlog::warn("the run already reached train.max_steps = {}; raise it with --set train.max_steps=N to go on",
                   cfg.train.max_steps);
  }

  const bool bf16 = cfg.train.dtype == "bfloat16";
  const int64_t tokens_per_step =
      static_cast<int64_t>(cfg.train.batch_size) * cfg.train.grad_accum * cfg.model.block_size;
  auto make_meta = [&](int64_t step) {
    CheckpointMeta m;
    m.step = step;
    m.train_loss = last_train_est;
    m.val_loss = last_val_est;
    m.best_val_loss = best_val;
    m.config_yaml = to_yaml(cfg);
    m.tokenizer_model = data.tokenizer.model_bytes();
    m.sampler_state = sampler.state();
    m.torch_rng_state = cpu_rng_state();
    return m;
  };

  // 5. The loop. "step s" = the weights after s updates; eval, snapshot and checkpoint look at them
  //    before the update s -> s + 1.
  model->train();
  Progress progress(start_step, cfg.train.max_steps);
  double train_seconds = 0.0;     // time in training steps only
  double snapshot_seconds = 0.0;  // time writing and analysing snapshots
  double interval_seconds = 0.0;  // since the last log line
  int64_t interval_steps = 0;
  int64_t train_steps_run = 0;
  int64_t finished_at = start_step;
  torch::Tensor last_batch_loss;  // loss of the last update's batch, read only when needed
  int64_t skipped_steps = 0;      // non-finite steps skipped (train.on_nonfinite: skip)
  for (int64_t step = start_step; step <= cfg.train.max_steps; ++step) {
    const bool last = step == cfg.train.max_steps;
    const bool first_of_resume = resuming && step == start_step;  // its eval/snapshot/checkpoint are on disk
    const double lr = lr_at(static_cast<int>(step), cfg.train);
    nlohmann::json record = {{"step", step}, {"lr", lr}};

    if (!first_of_resume && (step % cfg.train.eval_every == 0 || last)) {
      last_train_est = estimate_loss(model, data.train, cfg.train.eval_batches, cfg.train.batch_size,
                                     eval_seed(cfg.run.seed, "train"), bf16, device);
      last_val_est = estimate_loss(model, data.val, cfg.train.eval_batches, cfg.train.batch_size,
                                   eval_seed(cfg.run.seed, "val"), bf16, device);
      record["train_loss"] = last_train_est;
      record["val_loss"] = last_val_est;
      progress.clear();
      spdlog::info("eval step {} | train {:.4f} | val {:.4f}", step, last_train_est, last_val_est);
      if (last_val_est < best_val) {
        best_val = last_val_est;
        save_checkpoint(best_path, model, optimizer.get(), make_meta(step));
      }
    }
    if (!first_of_resume && model->wpe && (step % cfg.snapshot.every == 0 || last || stop_requested())) {
      const auto t0 = Clock::now();
      // train loss: the eval estimate at eval steps, else the last training batch's loss.
      const bool evaluated = record.contains("val_loss");
      const double train_loss = evaluated ? last_train_est : last_batch_loss.defined() ? last_batch_loss.item<double>() : NAN;
      std::string summary;
      try {
        summary = write_snapshot(rdir, step, model->position_table(), train_loss, evaluated ? last_val_est : NAN);
      } catch (const Error& e) {  // the .npy is written first; a failed analysis must not end the run
        summary = std::string("analysis failed: ") + e.what();
      }
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      progress.clear();
      snapshot_seconds += ms / 1000.0;
      const std::string cost = train_steps_run > 0
          ? fmt::format(" = {:.1f}% of a step", 100.0 * ms / (1000.0 * train_seconds / train_steps_run)) : "";
      spdlog::info("snapshot step {} | {} | analysis {:.1f} ms{}", step, summary, ms, cost);
    }
    const bool stop_here = (step == req.stop_at || stop_requested()) && step > start_step;
    if (!first_of_resume && (step % cfg.train.checkpoint_every == 0 || last || stop_here))  // step 0 too: resumable at once
      save_checkpoint(latest_path, model, optimizer.get(), make_meta(step));
    if (last || stop_here) {
      if (record.contains("val_loss")) append_line(metrics_path, record.dump());
      finished_at = step;
      break;
    }

    // One optimizer update: grad_accum micro-batches, clip, step.
    const auto t0 = Clock::now();
    const StepResult result = train_step(model, *optimizer, sampler, cfg.train, lr, device, &split);
    const torch::Tensor& loss_sum = result.loss;
    if (!result.finite) {
      ++skipped_steps;
      progress.clear();
      const std::string what = fmt::format("step {}: non-finite loss or gradient (loss {}, grad norm {})", step,
                                           loss_sum.item<double>(), result.grad_norm);
      if (cfg.train.on_nonfinite == "stop")
        throw Error(rdir + ": " + what + "; the run stopped, " + latest_path + " holds the last good checkpoint",
                    "lower train.lr, keep train.grad_clip on, or set train.on_nonfinite: skip; then resume with "
                    "poslab train --resume " + rdir);
      spdlog::warn("{}: skipped ({} skipped so far)", what, skipped_steps);
    }
    last_batch_loss = loss_sum;
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    train_seconds += dt;
    interval_seconds += dt;
    ++interval_steps;
    ++train_steps_run;

    if (step % cfg.train.log_every == 0 || record.contains("val_loss")) {
      const double loss = loss_sum.item<double>();
      const double tok_s = static_cast<double>(interval_steps * tokens_per_step) / interval_seconds;
      record["loss"] = loss;
      record["tokens_per_s"] = tok_s;
      record["ms_per_step"] = 1000.0 * interval_seconds / interval_steps;
      append_line(metrics_path, record.dump());
      if (step % cfg.train.log_every == 0) {
        progress.clear();
        spdlog::info("step {} | loss {:.4f} | lr {:.1e} | {:.1f} ms | {} tok/s", step, loss, lr,
                     1000.0 * interval_seconds / interval_steps, human_rate(tok_s));
        interval_seconds = 0.0;
        interval_steps = 0;
      }
    }
    progress.update(step + 1);
  }
  progress.clear();

  TrainSummary s;
  s.run_dir = rdir;
  if (cfg.run.report && finished_at >= cfg.train.max_steps && model->wpe) {
    try {
      s.report_html = write_run_report(rdir).index_html;
      spdlog::info("report: {}", s.report_html);
    } catch (const Error& e) {
      spdlog::error("report not written: {}{}", e.what(), e.hint().empty() ? "" : " (" + e.hint() + ")");
    }
  }
  s.steps = finished_at;
  s.finished = finished_at >= cfg.train.max_steps;
  s.train_loss = last_train_est;
  s.val_loss = last_val_est;
  s.seconds = std::chrono::duration<double>(Clock::now() - wall_start).count();
  s.tokens_per_s = train_seconds > 0 ? static_cast<double>(train_steps_run * tokens_per_step) / train_seconds : 0.0;
  s.interrupted_by = stop_signal();
  s.skipped_steps = skipped_steps;
  if (skipped_steps > 0) spdlog::warn("{} steps were skipped for non-finite loss or gradient", skipped_steps);
  if (!s.finished)
    spdlog::info("stopped at step {}{}: continue with poslab train --resume {}", finished_at,
                 s.interrupted_by ? fmt::format(" by signal {}", s.interrupted_by) : "", rdir);
  if (train_seconds > 0)
    spdlog::info("snapshots with their analysis took {:.2f} s = {:.2f}% of the training time", snapshot_seconds,
                 100.0 * snapshot_seconds / train_seconds);
  spdlog::info("done: {} steps | train {:.4f} | val {:.4f} | {:.1f} s wall | {} tok/s | {}", s.steps, s.train_loss,
               s.val_loss, s.seconds, human_rate(s.tokens_per_s), latest_path);
  return s;
}

}  // namespace poslab
