#include "train/trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "config/config.h"
#include "data/batches.h"
#include "data/dataset.h"
#include "data/tokenizer.h"
#include "distributed/comm.h"
#include "distributed/env.h"
#include "model/gpt.h"
#include "run/run_files.h"
#include "train/autotune.h"
#include "train/checkpoint.h"
#include "train/evaluate.h"
#include "train/optim.h"
#include "train/progress.h"
#include "train/schedule.h"
#include "train/snapshot.h"
#include "train/step.h"
#include "util/cuda.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/kernel_paths.h"
#include "util/lock.h"
#include "util/platform.h"
#include "util/signals.h"

namespace poslab {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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

std::string to_yaml_list(const std::vector<std::string>& items) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  return s + "]";
}

// train.init_from names a checkpoint that exists (its contents are checked when it is loaded).
void check_init_from(const std::string& path, const std::string& origin) {
  std::error_code ec;
  if (!path.empty() && !fs::is_regular_file(path, ec))
    throw Error(origin + ": train.init_from = " + path + ": no such checkpoint",
                "name a checkpoint file, e.g. runs/NAME/checkpoints/best.pt or one written by poslab extend");
}

void check_init_from(const Config& cfg) {
  const auto it = cfg.origin.find("train.init_from");
  check_init_from(cfg.train.init_from, it == cfg.origin.end() ? std::string("config") : it->second);
}

// The config of a fresh run (YAML + overrides), or the stored config of the run being resumed (+ overrides).
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
    check_init_from(cfg);
    return cfg;
  }
  if (req.resume_dir.empty()) {
    Config cfg = load_config(req.config_path, req.overrides);
    check_init_from(cfg);
    return cfg;
  }
  const std::string latest = RunFolder(req.resume_dir).latest_checkpoint();
  resume_meta = read_checkpoint_meta(latest);
  Config cfg = config_from_yaml(resume_meta.config_yaml, latest + " (stored config)");
  for (const auto& o : req.overrides) apply_override(cfg, o);
  validate(cfg);
  return cfg;
}

// Never mix two runs in one folder, never overwrite a run's files.
void check_folder_is_free(const std::string& rdir) {
  const RunFolder run(rdir);
  for (const std::string& f : run.files_of_a_started_run()) {
    std::error_code ec;
    if (!fs::exists(f, ec)) continue;
    if (!fs::exists(run.latest_checkpoint(), ec))  // stopped before its first checkpoint: nothing to resume from
      throw Error(rdir + ": already holds a run that stopped before its first checkpoint (" + f + ")",
                  "it cannot be resumed: delete the folder (rm -r " + rdir + ") and train again, or pick another "
                  "--set run.name=NAME");
    throw Error(rdir + ": already holds a run (" + f + ")",
                "continue it with poslab train --resume " + rdir + ", or pick another --set run.name=NAME");
  }
}

// A trainer killed while writing leaves its temporary files; with the lock held, no writer is running.
void remove_interrupted_writes(const std::string& rdir) {
  int stale = 0;
  for (const std::string& dir : RunFolder(rdir).written_folders()) stale += remove_stale_temporaries(dir);
  if (stale > 0) spdlog::warn("removed {} temporary file{} left by an interrupted write", stale, stale == 1 ? "" : "s");
}

// Rank 0 alone owns the run folder: it checks the folder is free, takes its lock (returned: one trainer per
// folder until it is released), makes the folders, removes interrupted writes and writes config.yaml. Its verdict
// reaches every rank, so that a taken folder stops them all with rank 0's error; the others only read later.
std::unique_ptr<RunLock> set_up_run_folder(const std::string& rdir, const Config& cfg, bool resuming, Comm& comm,
                                           const torch::Device& device) {
  std::unique_ptr<RunLock> lock;
  std::exception_ptr error;
  if (comm.is_main()) {
    try {
      if (!resuming) check_folder_is_free(rdir);
      make_dirs(rdir);
      const RunFolder run(rdir);
      lock = std::make_unique<RunLock>(run.lock());
      make_dirs(run.checkpoints());
      remove_interrupted_writes(rdir);
      write_file_atomic(run.config(), to_yaml(cfg));
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

// One training run: what it is made of, and the side effects of its loop as named steps. "Step s" = the weights
// after s updates; eval, snapshot and checkpoint look at them before the update s -> s + 1.
class Run {
 public:
  // Rank 0 of `comm` writes the run folder; every rank trains (data parallel). One process: comm of size 1.
  Run(const TrainRequest& req, Config cfg, std::string rdir, torch::Device device, int threads, Comm& comm,
      const CheckpointMeta& resume_meta)
      : req_(req), cfg_(std::move(cfg)), rdir_(std::move(rdir)), resuming_(!req.resume_dir.empty()),
        threads_(threads), device_(device), comm_(comm), writer_(comm.is_main()) {
    log_machine(resume_meta);
    torch::manual_seed(static_cast<uint64_t>(cfg_.run.seed));
    load_data(resume_meta);
    build_model();
    if (resuming_) resume();
    if (comm_.size() > 1) {  // the same start on every rank, whatever each one's initialisation did
      torch::NoGradGuard no_grad;
      comm_.broadcast_(model_->parameters(), "the initial weights' broadcast");
    }
  }

  TrainSummary loop() {
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
      if (writer_ && !on_disk && model_->wpe && (step % cfg_.snapshot.every == 0 || last || stop))
        snapshot(step, record);
      const bool stop_here = (step == req_.stop_at || stop) && step > start_step_;
      if (writer_ && !on_disk && (step % cfg_.train.checkpoint_every == 0 || last || stop_here))  // step 0 too
        save_checkpoint(latest_path(), model_, optimizer_.get(), meta(step));
      if (last || stop_here) {
        if (writer_ && record.contains("val_loss")) append_line(metrics_path(), record.dump());
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

  void log_machine(const CheckpointMeta& resume_meta) const {
    spdlog::info("BLAS: {}", blas_summary());
    spdlog::info("threads: {} (LibTorch intra-op), {} (OpenBLAS) | device: {} | dtype: {}", threads_, blas_threads(),
                 device_.is_cuda() ? device_.str() + ": " + cuda_device_summary() : device_.str(), cfg_.train.dtype);
    spdlog::info("run folder {}{}", rdir_, resuming_ ? fmt::format(" (resuming from step {})", resume_meta.step) : "");
    spdlog::info("effective config:\n{}", to_yaml(cfg_));
  }

  // A resumed run keeps the tokenizer it was trained with (the checkpoint's own, whatever poslab would train
  // today) and must find the same corpus.
  void load_data(const CheckpointMeta& resume_meta) {
    // Rank 0 trains the tokenizer and writes the token cache; the others then read them.
    if (!writer_) comm_.barrier("waiting for rank 0's tokenizer and token cache");
    load_tokens(resume_meta);
    if (writer_) comm_.barrier("the other ranks waiting for the tokenizer and token cache");
  }

  void load_tokens(const CheckpointMeta& resume_meta) {
    if (resuming_) {
      const Tokenizer stored = Tokenizer::from_bytes(resume_meta.tokenizer_model, latest_path() + " (stored tokenizer)");
      data_ = prepare_tokens(cfg_, threads_, &stored);
      if (!resume_meta.corpus_hash.empty() && resume_meta.corpus_hash != data_.corpus_hash)
        throw Error(req_.resume_dir + ": the corpus changed since the checkpoint was written (data.corpus: " +
                        to_yaml_list(cfg_.data.corpus) + ")",
                    "restore the original data.corpus, or start a new run");
    } else if (!cfg_.train.init_from.empty()) {  // the weights' own tokenizer: the vocabulary must match them
      const std::string& from = cfg_.train.init_from;
      const Tokenizer stored = Tokenizer::from_bytes(read_checkpoint_meta(from).tokenizer_model, from + " (stored tokenizer)");
      data_ = prepare_tokens(cfg_, threads_, &stored);
    } else {
      data_ = prepare_tokens(cfg_, threads_);
    }
    spdlog::info("data: vocab {} | train {} tokens | val {} tokens", data_.tokenizer.vocab_size(), data_.train.size(),
                 data_.val.size());
  }

  void build_model() {
    if (device_.is_cuda()) make_cuda_deterministic();  // before the first CUDA op: resumes repeat exactly
    model_ = GPT(cfg_.model, data_.tokenizer.vocab_size());
    model_->to(device_);
    if (!resuming_ && !cfg_.train.init_from.empty()) init_from(cfg_.train.init_from);
    set_trainable(model_, cfg_.train.trainable);
    optimizer_ = make_optimizer(model_, cfg_.train);
    spdlog::info("model: {:.2f}M parameters ({:.2f}M without the position table) | position: {}{}",
                 model_->num_params() / 1e6, model_->num_params(false) / 1e6, cfg_.model.position,
                 cfg_.train.trainable == "wpe" ? " | trainable: the position table only" : "");
    sampler_ = std::make_unique<BatchSampler>(data_.train, cfg_.train.batch_size, cfg_.model.block_size,
                                              static_cast<uint64_t>(cfg_.run.seed));
    split_ = std::make_unique<BatchSplit>(model_, batch_split_ways(cfg_, threads_, device_, comm_.size()));
    spdlog::info("batch split: {} way{} (run.batch_split: {})", split_->ways(), split_->ways() == 1 ? "" : "s",
                 cfg_.run.batch_split == 0 ? "auto" : std::to_string(cfg_.run.batch_split));
    choose_paths();
  }

  // The CPU kernel paths (util/kernel_paths.h): a resumed run goes on with those it started with (unless
  // POSLAB_KERNELS says otherwise); a new run chooses them (measured, cached or forced: train/autotune.h) and
  // records them in the run folder. With many processes rank 0 chooses and the others read its record.
  void choose_paths() {
    const RunFolder run(rdir_);
    const bool forced = std::getenv("POSLAB_KERNELS") != nullptr && *std::getenv("POSLAB_KERNELS") != '\0';
    if (resuming_ && !forced) {
      if (const auto rec = read_kernel_record(run)) {
        set_kernel_paths(parse_kernel_paths(*rec, kernel_paths(), run.kernel_paths()));
        spdlog::info("kernel paths: {} (as the run started, {})", to_string(kernel_paths()), run.kernel_paths());
        apply_split_choice();
        return;
      }
    }
    if (writer_) {
      const KernelTuning t = choose_kernel_paths(model_, *split_, cfg_, device_, threads_);
      write_kernel_record(run, to_string(t.chosen), t.how);
    }
    if (comm_.size() > 1) {
      comm_.barrier("waiting for rank 0's kernel paths");
      if (!writer_) {
        if (const auto rec = read_kernel_record(run)) {
          set_kernel_paths(parse_kernel_paths(*rec, kernel_paths(), run.kernel_paths()));
          spdlog::info("kernel paths: {} (rank 0's, {})", to_string(kernel_paths()), run.kernel_paths());
        } else {
          spdlog::warn("kernel paths: rank 0's record {} is not on this machine; this rank keeps {}", run.kernel_paths(),
                       to_string(kernel_paths()));
        }
      }
    }
    apply_split_choice();
  }

  // batch_split=none: the batch whole, every intra-op thread on each op.
  void apply_split_choice() {
    if (batch_split_of(split_->ways()) == split_->ways()) return;
    split_ = std::make_unique<BatchSplit>(model_, 1);
    spdlog::info("batch split: none (kernel paths: batch_split=none)");
  }

  // A new run from another run's weights: nothing else of that checkpoint (optimizer, step, sampler, RNG).
  void init_from(const std::string& path) {
    const CheckpointMeta m = load_checkpoint(path, model_, nullptr);
    spdlog::info("weights from {} (step {}{}); optimizer, step, sampler and generator start afresh", path, m.step,
                 cfg_.model.extended_from > 0 ? fmt::format(", its table extended from {} to {} positions by {}",
                                                            cfg_.model.extended_from, cfg_.model.block_size,
                                                            cfg_.model.extend_method)
                                              : "");
  }

  // Weights, optimizer, sampler and generator as the checkpoint left them; logs cut back to its step.
  void resume() {
    const CheckpointMeta m = load_checkpoint(latest_path(), model_, optimizer_.get());
    sampler_->set_state(m.sampler_state);
    set_cpu_rng_state(m.torch_rng_state);
    if (device_.is_cuda()) set_cuda_rng_state(m.cuda_rng_state, latest_path());
    start_step_ = finished_at_ = m.step;
    best_val_ = m.best_val_loss;
    train_est_ = m.train_loss;
    val_est_ = m.val_loss;
    if (!writer_) return;
    truncate_logs_after(RunFolder(rdir_), start_step_);
    if (start_step_ >= cfg_.train.max_steps)
      spdlog::warn("the run already reached train.max_steps = {}; raise it with --set train.max_steps=N to go on",
                   cfg_.train.max_steps);
  }

  CheckpointMeta meta(int64_t step) const {
    CheckpointMeta m;
    m.step = step;
    m.train_loss = train_est_;
    m.val_loss = val_est_;
    m.best_val_loss = best_val_;
    m.config_yaml = to_yaml(cfg_);
    m.tokenizer_model = data_.tokenizer.model_bytes();
    m.corpus_hash = data_.corpus_hash;
    m.sampler_state = sampler_->state();
    m.torch_rng_state = cpu_rng_state();
    if (device_.is_cuda()) m.cuda_rng_state = cuda_rng_state();
    return m;
  }

  // Train and val loss on the fixed eval windows; a new best val loss writes best.pt.
  void evaluate(int64_t step, nlohmann::json& record) {
    const bool bf16 = cfg_.train.dtype == "bfloat16";
    // Each rank scores its shard of the same windows; the parts add up to the estimates on every rank.
    auto parts = torch::tensor({estimate_loss(model_, data_.train, cfg_.train.eval_batches, cfg_.train.batch_size,
                                              eval_seed(cfg_.run.seed, "train"), bf16, device_, comm_.shard()),
                                estimate_loss(model_, data_.val, cfg_.train.eval_batches, cfg_.train.batch_size,
                                              eval_seed(cfg_.run.seed, "val"), bf16, device_, comm_.shard())},
                               torch::TensorOptions().dtype(torch::kFloat64).device(device_));
    comm_.sum_({parts}, "the evaluation's loss sum");
    parts = parts.to(torch::kCPU);
    train_est_ = parts[0].item<double>();
    val_est_ = parts[1].item<double>();
    record["train_loss"] = train_est_;
    record["val_loss"] = val_est_;
    progress_->clear();
    spdlog::info("eval step {} | train {:.4f} | val {:.4f}", step, train_est_, val_est_);
    if (val_est_ < best_val_) {
      best_val_ = val_est_;
      if (writer_) save_checkpoint(best_path(), model_, optimizer_.get(), meta(step));
    }
  }

  // The position table as .npy with its analysis; a failed analysis is logged, never ends the run.
  void snapshot(int64_t step, const nlohmann::json& record) {
    const auto t0 = Clock::now();
    // train loss: the eval estimate at eval steps, else the last training batch's loss.
    const bool evaluated = record.contains("val_loss");
    const double train_loss = evaluated ? train_est_ : last_batch_loss_.defined() ? last_batch_loss_.item<double>() : NAN;
    std::string summary;
    try {
      // layer 0's attention on real text: a few of the val eval's windows, the same at every snapshot
      const UsageWindows windows{&data_.val, std::min(cfg_.train.eval_batches, 4), cfg_.train.batch_size,
                                 eval_seed(cfg_.run.seed, "val")};
      summary = write_snapshot(rdir_, step, model_, train_loss, evaluated ? val_est_ : NAN, &windows);
    } catch (const Error& e) {  // the .npy is written first; a failed analysis must not end the run
      summary = std::string("analysis failed: ") + e.what();
    }
    const double ms = 1000.0 * seconds_since(t0);
    progress_->clear();
    snapshot_seconds_ += ms / 1000.0;
    const std::string cost = train_steps_run_ > 0
        ? fmt::format(" = {:.1f}% of a step", 100.0 * ms / (1000.0 * train_seconds_ / train_steps_run_)) : "";
    spdlog::info("snapshot step {} | {} | analysis {:.1f} ms{}", step, summary, ms, cost);
  }

  // One optimizer update (grad_accum micro-batches, clip, AdamW), then its log line and metrics record.
  void update(int64_t step, double lr, nlohmann::json& record) {
    const auto t0 = Clock::now();
    const double comm_before = comm_.seconds();
    const StepResult result = train_step(model_, *optimizer_, *sampler_, cfg_.train, lr, device_, split_.get(),
                                         comm_.size() > 1 ? &comm_ : nullptr);
    stop_seen_ = stop_seen_ || result.stop;
    interval_comm_seconds_ += comm_.seconds() - comm_before;
    step_comm_seconds_ += comm_.seconds() - comm_before;
    if (!result.finite) handle_nonfinite(step, result);
    last_batch_loss_ = result.loss;
    const double dt = seconds_since(t0);
    train_seconds_ += dt;
    interval_seconds_ += dt;
    ++interval_steps_;
    ++train_steps_run_;
    if (step % cfg_.train.log_every == 0 || record.contains("val_loss")) log_step(step, lr, record);
  }

  // train.on_nonfinite: stop (the last checkpoint stays) or skip the step and count it.
  void handle_nonfinite(int64_t step, const StepResult& result) {
    ++skipped_steps_;
    progress_->clear();
    const std::string what = fmt::format("step {}: non-finite loss or gradient (loss {}, grad norm {})", step,
                                         result.loss.item<double>(), result.grad_norm);
    if (cfg_.train.on_nonfinite == "stop")
      throw Error(rdir_ + ": " + what + "; the run stopped, " + latest_path() + " holds the last good checkpoint",
                  "lower train.lr, keep train.grad_clip on, or set train.on_nonfinite: skip; then resume with "
                  "poslab train --resume " + rdir_);
    spdlog::warn("{}: skipped ({} skipped so far)", what, skipped_steps_);
  }

  void log_step(int64_t step, double lr, nlohmann::json& record) {
    const double loss = last_batch_loss_.item<double>();
    const double tok_s = static_cast<double>(interval_steps_ * tokens_per_step()) / interval_seconds_;
    record["loss"] = loss;
    record["tokens_per_s"] = tok_s;
    record["ms_per_step"] = 1000.0 * interval_seconds_ / interval_steps_;
    if (comm_.size() > 1) record["allreduce_ms_per_step"] = 1000.0 * interval_comm_seconds_ / interval_steps_;
    if (writer_) append_line(metrics_path(), record.dump());
    if (step % cfg_.train.log_every != 0) return;
    progress_->clear();
    spdlog::info("step {} | loss {:.4f} | lr {:.1e} | {:.1f} ms | {} tok/s{}", step, loss, lr,
                 1000.0 * interval_seconds_ / interval_steps_, human_rate(tok_s),
                 comm_.size() > 1 ? fmt::format(" | all-reduce {:.1f} ms", 1000.0 * interval_comm_seconds_ / interval_steps_) : "");
    interval_seconds_ = 0.0;
    interval_comm_seconds_ = 0.0;
    interval_steps_ = 0;
  }

  // The summary of the run and its log lines (the caller writes the report: TrainSummary::report_due).
  TrainSummary finish() {
    TrainSummary s;
    s.run_dir = rdir_;
    s.steps = finished_at_;
    s.finished = finished_at_ >= cfg_.train.max_steps;
    s.report_due = writer_ && cfg_.run.report && s.finished && model_->wpe;
    s.train_loss = train_est_;
    s.val_loss = val_est_;
    s.tokens_per_s = train_seconds_ > 0 ? static_cast<double>(train_steps_run_ * tokens_per_step()) / train_seconds_ : 0.0;
    s.interrupted_by = stop_signal();
    s.skipped_steps = skipped_steps_;
    if (skipped_steps_ > 0) spdlog::warn("{} steps were skipped for non-finite loss or gradient", skipped_steps_);
    if (!s.finished)
      spdlog::info("stopped at step {}{}: continue with poslab train --resume {}", finished_at_,
                   s.interrupted_by ? fmt::format(" by signal {}", s.interrupted_by) : "", rdir_);
    if (train_seconds_ > 0)
      spdlog::info("snapshots with their analysis took {:.2f} s = {:.2f}% of the training time", snapshot_seconds_,
                   100.0 * snapshot_seconds_ / train_seconds_);
    s.world_size = comm_.size();
    s.allreduce_seconds = step_comm_seconds_;
    s.train_seconds = train_seconds_;
    if (comm_.size() > 1 && train_steps_run_ > 0)
      spdlog::info("{} processes ({} backend) | gradient all-reduce {:.2f} s = {:.1f} ms per step = {:.1f}% of the "
                   "training time (waits for the slowest rank included)", comm_.size(), comm_.backend(),
                   step_comm_seconds_, 1000.0 * step_comm_seconds_ / train_steps_run_,
                   100.0 * step_comm_seconds_ / train_seconds_);
    return s;
  }

  const TrainRequest& req_;
  const Config cfg_;
  const std::string rdir_;
  const bool resuming_;
  const int threads_;
  const torch::Device device_;
  Comm& comm_;
  const bool writer_;         // rank 0: the only one that writes the run folder
  TokenData data_;
  GPT model_{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  std::unique_ptr<BatchSampler> sampler_;
  std::unique_ptr<BatchSplit> split_;
  Progress* progress_ = nullptr;  // the loop's progress bar, while the loop runs

  int64_t start_step_ = 0, finished_at_ = 0;
  double best_val_ = INFINITY;
  double train_est_ = NAN, val_est_ = NAN;  // the last eval's estimates
  torch::Tensor last_batch_loss_;           // loss of the last update's batch, read only when needed
  int64_t skipped_steps_ = 0;               // non-finite steps skipped (train.on_nonfinite: skip)
  double train_seconds_ = 0.0;              // time in training steps only
  double snapshot_seconds_ = 0.0;           // time writing and analysing snapshots
  double interval_seconds_ = 0.0;           // since the last log line
  double interval_comm_seconds_ = 0.0;      // of which in the gradient all-reduce
  double step_comm_seconds_ = 0.0;          // in the gradient all-reduce, all steps
  bool stop_seen_ = false;                  // some rank had a stop request (many processes)
  int64_t interval_steps_ = 0;
  int64_t train_steps_run_ = 0;
};

}  // namespace

Config train_config(const TrainRequest& req) {
  CheckpointMeta resume_meta;
  return resolve_config(req, resume_meta);
}

TrainSummary train(const TrainRequest& req) {
  const auto wall_start = Clock::now();
  const DistEnv env = read_dist_env();
  CheckpointMeta resume_meta;
  Config cfg = resolve_config(req, resume_meta);
  check_divides("train.batch_size", cfg.train.batch_size, env.world_size);
  // train.dtype auto becomes what this machine runs, and is stored so: a resumed run keeps its dtype.
  const std::string asked_dtype = cfg.train.dtype;
  const std::string device_name = resolve_device(cfg.run.device);
  cfg.train.dtype = resolve_dtype(cfg.train.dtype, device_name);
  torch::Device device(torch::kCPU);
  if (device_name == "cuda") {  // one GPU per process: the LOCAL_RANK-th of this machine
    use_cuda_device(env.local_rank);
    device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
  }
  const int threads = apply_threads(cfg.run.threads, env.local_world_size);
  const bool resuming = !req.resume_dir.empty();
  const std::string rdir = resuming ? req.resume_dir : run_dir(cfg);
  Comm comm(env, device, std::chrono::seconds(cfg.run.dist_timeout_s));
  const std::unique_ptr<RunLock> lock = set_up_run_folder(rdir, cfg, resuming, comm, device);  // held to the end

  if (asked_dtype == "auto")
    spdlog::info("train.dtype auto: {}{}", cfg.train.dtype,
                 cfg.train.dtype == "float32" ? " (this CPU has no AVX512-BF16 or AMX: bf16 products would run in float, no faster than float32)" : "");
  Run run(req, cfg, rdir, device, threads, comm, resume_meta);
  TrainSummary s = run.loop();
  s.seconds = seconds_since(wall_start);
  spdlog::info("done: {} steps | train {:.4f} | val {:.4f} | {:.1f} s wall | {} tok/s | {}", s.steps, s.train_loss,
               s.val_loss, s.seconds, human_rate(s.tokens_per_s), RunFolder(rdir).latest_checkpoint());
  return s;
}

}  // namespace poslab
