#include "tune/kernel_choice.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "run/run_files.h"
#include "run/run_folder.h"
#include "tune/autotune.h"
#include "util/kernel_paths.h"

namespace poslab {
namespace {

// What a record leaves out stays as now, but a record without a step is a run's that stepped by autograd (the
// one step there was).
KernelPaths recorded_base(const std::string& record) {
  KernelPaths base = kernel_paths();
  if (record.find("step=") == std::string::npos) base.step = "autograd";
  if (record.find("sdpa=") == std::string::npos) base.sdpa = "auto";  // LibTorch's pick, as such a run had
  return base;
}

// batch_split=none: the batch whole, every intra-op thread on each op.
void apply_split_choice(GPT& model, std::unique_ptr<BatchSplit>& split) {
  if (batch_split_of(split->ways()) == split->ways()) return;
  split = std::make_unique<BatchSplit>(model, 1);
  spdlog::info("batch split: none (kernel paths: batch_split=none)");
}

// A rank other than 0 takes rank 0's record, once rank 0 wrote it; on another machine it keeps its own paths.
void take_rank0_paths(const RunFolder& run, const Config& cfg, const torch::Device& device) {
  if (const auto rec = read_kernel_record(run)) {
    set_kernel_paths(with_runnable_sdpa(parse_kernel_paths(*rec, recorded_base(*rec), run.kernel_paths()), cfg, device,
                                        "rank 0's record " + run.kernel_paths()));
    spdlog::info("kernel paths: {} (rank 0's, {})", to_string_in_use(kernel_paths(), cfg.train.dtype),
                 run.kernel_paths());
  } else {
    spdlog::warn("kernel paths: rank 0's record {} is not on this machine; this rank keeps {}", run.kernel_paths(),
                 to_string_in_use(kernel_paths(), cfg.train.dtype));
  }
}

}  // namespace

void choose_run_kernel_paths(const std::string& rdir, bool resuming, const Config& cfg, GPT& model,
                             std::unique_ptr<BatchSplit>& split, const torch::Device& device, int threads, Comm& comm) {
  const RunFolder run(rdir);
  const bool forced = std::getenv("POSLAB_KERNELS") != nullptr && *std::getenv("POSLAB_KERNELS") != '\0';
  if (resuming && !forced) {
    if (const auto rec = read_kernel_record(run)) {
      set_kernel_paths(with_runnable_sdpa(parse_kernel_paths(*rec, recorded_base(*rec), run.kernel_paths()), cfg,
                                          device, "the run's record " + run.kernel_paths()));
      spdlog::info("kernel paths: {} (as the run started, {})", to_string_in_use(kernel_paths(), cfg.train.dtype),
                   run.kernel_paths());
      apply_split_choice(model, split);
      return;
    }
  }
  if (comm.is_main()) {
    const KernelTuning t = choose_kernel_paths(model, *split, cfg, device, threads);
    write_kernel_record(run, to_string(t.chosen), t.how);
  }
  if (comm.size() > 1) {
    comm.barrier("waiting for rank 0's kernel paths");
    if (!comm.is_main()) take_rank0_paths(run, cfg, device);
  }
  apply_split_choice(model, split);
}

}  // namespace poslab
