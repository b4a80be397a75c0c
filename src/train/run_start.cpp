// A training run's start: the machine logged, the data and the model made, the weights taken from another run or
// the resumed run's state restored; and the state its checkpoints store.
#include "train/training_run.h"

#include <ATen/CPUGeneratorImpl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "run/run_files.h"
#include "train/optim.h"
#include "tune/kernel_choice.h"
#include "util/cuda.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/platform.h"
#include "util/plural.h"
#include "util/shell.h"
#include "util/text.h"
#include "util/version.h"

namespace poslab {
namespace {

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

std::string to_yaml_list(const std::vector<std::string>& items) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  return s + "]";
}

}  // namespace

TrainingRun::TrainingRun(const TrainRequest& req, Config cfg, std::string rdir, torch::Device device, int threads,
                         Comm& comm, const CheckpointMeta& resume_meta)
    : req_(req),
      cfg_(std::move(cfg)),
      rdir_(std::move(rdir)),
      resuming_(!req.resume_dir.empty()),
      threads_(threads),
      device_(device),
      comm_(comm),
      writer_(comm.is_main()) {
  log_machine(resume_meta);
  torch::manual_seed(static_cast<uint64_t>(cfg_.run.seed));
  load_data(resume_meta);
  build_model();
  if (resuming_) resume();
  if (writer_ && cfg_.run.tensorboard) {
    tensorboard_ = std::make_unique<TensorboardLog>(RunFolder(rdir_));
    spdlog::info("TensorBoard: tensorboard --logdir {} (its curves as the run trains)",
                 shell_word(RunFolder(rdir_).tensorboard_dir()));
  }
  if (comm_.size() > 1) {  // the same start on every rank, whatever each one's initialisation did
    torch::NoGradGuard no_grad;
    comm_.broadcast_(model_->parameters(), "the initial weights' broadcast");
  }
}

void TrainingRun::log_machine(const CheckpointMeta& resume_meta) const {
  spdlog::info("{}, built with {}", poslab_version(), build_summary());
  spdlog::info("BLAS: {}", blas_summary());
  spdlog::info("threads: {} (LibTorch intra-op), {} (OpenBLAS) | device: {} | dtype: {}", threads_, blas_threads(),
               device_.is_cuda() ? device_.str() + ": " + cuda_device_summary() : device_.str(), cfg_.train.dtype);
  spdlog::info("run folder {}{}", rdir_, resuming_ ? fmt::format(" (resuming from step {})", resume_meta.step) : "");
  // The keys that differ from poslab's defaults, each with where it came from; every key is in RUN_DIR/config.yaml
  // (and at debug level here).
  std::string changed;
  std::vector<ConfigChange> changes = config_changes(Config(), cfg_);
  const bool auto_dtype = origin_of(cfg_, "train.dtype").rfind("auto in ", 0) == 0;  // asked, then resolved
  if (auto_dtype && std::none_of(changes.begin(), changes.end(), [](const auto& c) { return c.key == "train.dtype"; }))
    changes.push_back({"train.dtype", "", cfg_.train.dtype});
  for (const ConfigChange& c : changes) {
    std::string from = origin_words(cfg_, c.key);  // "PATH (stored config)" reads, in parentheses, as below
    const std::string stored = " (stored config)";
    if (from.size() > stored.size() && ends_with(from, stored))
      from = "the stored config of " + from.substr(0, from.size() - stored.size());
    changed += fmt::format("\n  {}: {} ({})", c.key, c.to, from);
  }
  spdlog::info("config: {} (every key: {}){}",
               changed.empty() ? "poslab's defaults" : "these keys differ from poslab's defaults",
               RunFolder(rdir_).config(), changed);
  spdlog::debug("effective config:\n{}", to_yaml(cfg_));
}

// A resumed run keeps the tokenizer it was trained with (the checkpoint's own, whatever poslab would train
// today) and must find the same corpus.
void TrainingRun::load_data(const CheckpointMeta& resume_meta) {
  // Rank 0 trains the tokenizer and writes the token cache; the others then read them.
  if (!writer_) comm_.barrier("waiting for rank 0's tokenizer and token cache");
  load_tokens(resume_meta);
  if (writer_) comm_.barrier("the other ranks waiting for the tokenizer and token cache");
}

void TrainingRun::load_tokens(const CheckpointMeta& resume_meta) {
  if (resuming_) {
    const Tokenizer stored = Tokenizer::from_bytes(resume_meta.tokenizer_model, latest_path() + " (stored tokenizer)");
    data_ = prepare_tokens(cfg_, threads_, &stored);
    if (!resume_meta.corpus_hash.empty() && resume_meta.corpus_hash != data_.corpus_hash)
      throw Error(req_.resume_dir + ": the corpus changed since the checkpoint was written (data.corpus: " +
                      to_yaml_list(cfg_.data.corpus) + ")",
                  "restore the original data.corpus, or start a new run");
  } else if (!cfg_.train.init_from.empty()) {  // the weights' own tokenizer: the vocabulary must match them
    const std::string& from = cfg_.train.init_from;
    const Tokenizer stored =
        Tokenizer::from_bytes(read_checkpoint_meta(from).tokenizer_model, from + " (stored tokenizer)");
    data_ = prepare_tokens(cfg_, threads_, &stored);
  } else {
    data_ = prepare_tokens(cfg_, threads_);
  }
  spdlog::info("data: vocab {} | train {} tokens | val {} tokens", data_.tokenizer.vocab_size(),
               grouped(static_cast<int64_t>(data_.train.size())), grouped(static_cast<int64_t>(data_.val.size())));
  // An eval drawing windows well beyond the validation split's size reads its tokens again and again (as eval's
  // --batches says): said, before the first eval's wait.
  const double read = static_cast<double>(cfg_.train.eval_batches) * cfg_.train.batch_size * cfg_.model.block_size;
  if (writer_ && !data_.val.empty() && read > 10.0 * static_cast<double>(data_.val.size()))
    spdlog::warn(
        "{}train.eval_batches = {}: each eval draws {} windows of {} tokens, {:.0f}× the val split's {} tokens, so "
        "they overlap: the loss changes little past the split's size, and each eval takes the time of {} steps' "
        "forward passes; a few times the split's size is {}",
        origin_prefix(cfg_, "train.eval_batches"), cfg_.train.eval_batches,
        grouped(static_cast<int64_t>(cfg_.train.eval_batches) * cfg_.train.batch_size), cfg_.model.block_size,
        read / static_cast<double>(data_.val.size()), grouped(static_cast<int64_t>(data_.val.size())),
        grouped(cfg_.train.eval_batches),
        fmt::format("--set train.eval_batches={}",
                    std::max<int64_t>(1, static_cast<int64_t>(
                                             4.0 * static_cast<double>(data_.val.size()) /
                                             (static_cast<double>(cfg_.train.batch_size) * cfg_.model.block_size)))));
}

void TrainingRun::build_model() {
  if (device_.is_cuda()) {
    make_cuda_deterministic();  // before the first CUDA op: resumes repeat exactly
    set_cuda_tf32(cfg_.train.tf32);
  }
  model_ = GPT(cfg_.model, data_.tokenizer.vocab_size());
  model_->to(device_);
  if (!resuming_ && !cfg_.train.init_from.empty()) init_from(cfg_.train.init_from);
  set_trainable(model_, cfg_.train.trainable);
  optimizer_ = make_optimizer(model_, cfg_.train);
  spdlog::info("model: {} parameters ({} without the position table) | position: {}{}", grouped(model_->num_params()),
               grouped(model_->num_params(false)), cfg_.model.position,
               cfg_.train.trainable == "wpe" ? " | trainable: the position table only" : "");
  spdlog::info(
      "AdamW: {} (train.adamw: {}){}",
      adamw_on_device(cfg_.train, device_)
          ? "LibTorch's fused kernel on the device, step counts and clipping there; the host reads at log steps"
          : "poslab's fused CPU step",
      cfg_.train.adamw, device_.is_cuda() ? fmt::format(" | TF32: {}", cfg_.train.tf32 ? "on" : "off") : "");
  sampler_ = std::make_unique<BatchSampler>(data_.train, cfg_.train.batch_size, cfg_.model.block_size,
                                            static_cast<uint64_t>(cfg_.run.seed));
  split_ = std::make_unique<BatchSplit>(model_, batch_split_ways(cfg_, threads_, device_, comm_.size()));
  spdlog::info("batch split: {} way{} (run.batch_split: {})", split_->ways(), split_->ways() == 1 ? "" : "s",
               cfg_.run.batch_split == 0 ? "auto" : std::to_string(cfg_.run.batch_split));
  choose_run_kernel_paths(rdir_, resuming_, cfg_, model_, split_, device_, threads_, comm_);
  if (cfg_.train.cuda_graph) {
    graph_ = std::make_unique<StepGraph>(model_, *optimizer_, cfg_.train, device_, split_.get());
    spdlog::info("step: a CUDA graph (train.cuda_graph), captured after {} eager steps and replayed",
                 StepGraph::kEagerSteps);
  }
}

// A new run from another run's weights: nothing else of that checkpoint (optimizer, step, sampler, RNG).
void TrainingRun::init_from(const std::string& path) {
  const CheckpointMeta m = load_checkpoint(path, model_, nullptr);
  spdlog::info("weights from {} (step {}{}); optimizer, step, sampler and generator start afresh", path, m.step,
               cfg_.model.extended_from > 0
                   ? fmt::format(", its table extended from {} to {} positions by {}", cfg_.model.extended_from,
                                 cfg_.model.block_size, cfg_.model.extend_method)
                   : "");
}

// Weights, optimizer, sampler and generator as the checkpoint left them; logs cut back to its step.
void TrainingRun::resume() {
  const CheckpointMeta m = load_checkpoint(latest_path(), model_, optimizer_.get());
  sampler_->set_state(m.sampler_state);
  set_cpu_rng_state(m.torch_rng_state);
  if (device_.is_cuda()) set_cuda_rng_state(m.cuda_rng_state, latest_path());
  start_step_ = finished_at_ = m.step;
  best_val_ = m.best_val_loss;
  train_est_ = m.train_loss;
  val_est_ = m.val_loss;
  eval_step_ = m.eval_step;
  if (!writer_) return;
  truncate_logs_after(RunFolder(rdir_), start_step_);
  // best.pt is read by nothing else here: one damaged since it was written would stay so while no eval improves on its
  // loss. Said now, and written again at the run's next eval.
  if (std::error_code ec; std::filesystem::exists(best_path(), ec)) {
    try {
      (void)read_checkpoint_meta(best_path());
    } catch (const Error& e) {
      if (start_step_ < cfg_.train.max_steps) {
        spdlog::warn("{}: the run's next eval writes it again, with the best val loss from here on ({:.4f} before)",
                     e.what(), best_val_);
        best_val_ = INFINITY;
      } else {
        spdlog::warn("{} (latest.pt, step {}, is the run's checkpoint that reads)", e.what(), start_step_);
      }
    }
  }
  // the --set values, now that the checkpoint, the logs and the corpus are read: a resume refused before left the
  // run's config.yaml as it was. A finished run trains no step and writes no checkpoint: its config.yaml stays the
  // checkpoint's (a --set run.report=true that draws its report leaves nothing for the next resume to refuse).
  if (start_step_ >= cfg_.train.max_steps) {
    if (cfg_.run.report && cfg_.model.position != "none")  // what such a resume is for: the report, drawn again
      spdlog::info(
          "the run already reached train.max_steps = {}: no step to train, its report is drawn again "
          "(--set train.max_steps=N trains on)",
          cfg_.train.max_steps);
    else
      spdlog::warn("the run already reached train.max_steps = {}; raise it with --set train.max_steps=N to go on",
                   cfg_.train.max_steps);
    return;
  }
  write_file_atomic(RunFolder(rdir_).config(), to_yaml(cfg_));
}

CheckpointMeta TrainingRun::meta(int64_t step) const {
  CheckpointMeta m;
  m.step = step;
  m.train_loss = train_est_;
  m.val_loss = val_est_;
  m.eval_step = eval_step_;
  m.best_val_loss = best_val_;
  m.config_yaml = to_yaml(cfg_);
  m.tokenizer_model = data_.tokenizer.model_bytes();
  m.corpus_hash = data_.corpus_hash;
  m.sampler_state = sampler_->state();
  m.torch_rng_state = cpu_rng_state();
  if (device_.is_cuda()) m.cuda_rng_state = cuda_rng_state();
  return m;
}

}  // namespace poslab
