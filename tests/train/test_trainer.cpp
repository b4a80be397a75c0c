// End to end: a tiny run on a generated corpus, and exact resume.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/fmt/fmt.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

#include "config/config.h"
#include "data/dataset.h"
#include "data/tokenizer.h"
#include "extend/extend.h"
#include "formats/npy.h"
#include "run/run_files.h"
#include "source_paths.h"
#include "test_devices.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/device_adamw.h"
#include "train/optim.h"
#include "train/run_setup.h"
#include "train/tiny_run.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/lock.h"
#include "util/platform.h"
#include "util/process.h"
#include "util/signals.h"

namespace poslab {
namespace {

using test::CapturedLog;
using test::error_of;
using test::read_jsonl;
using test::TempDir;
namespace fs = std::filesystem;

using test::tiny_run;

TEST(Trainer, TinyRunLearnsAndWritesTheRunFolder) {
  TempDir dir;
  const TrainSummary s = train(tiny_run(dir, "e2e", 60));
  const std::string rd = dir / "e2e";
  EXPECT_EQ(s.run_dir, rd);
  EXPECT_TRUE(s.finished);
  for (const char* f : {"config.yaml", "metrics.jsonl", "checkpoints/latest.pt", "checkpoints/best.pt",
                        "snapshots/index.jsonl", "snapshots/wpe_step000000.npy", "snapshots/wpe_step000060.npy"})
    EXPECT_TRUE(fs::exists(fs::path(rd) / f)) << f;

  const auto metrics = read_jsonl(rd + "/metrics.jsonl");
  ASSERT_FALSE(metrics.empty());
  std::vector<double> val;
  for (const auto& m : metrics) {
    EXPECT_TRUE(m.contains("step") && m.contains("lr"));
    if (m.contains("loss")) {
      EXPECT_TRUE(m.contains("tokens_per_s"));
    }
    if (m.contains("val_loss")) val.push_back(m["val_loss"].get<double>());
  }
  ASSERT_EQ(val.size(), 4u);  // steps 0, 20, 40, 60
  EXPECT_LT(val.back(), val.front() - 0.5) << "val loss must fall: " << val.front() << " -> " << val.back();
  EXPECT_LT(s.val_loss, val.front());

  const auto index = read_jsonl(rd + "/snapshots/index.jsonl");
  ASSERT_EQ(index.size(), 4u);
  EXPECT_EQ(index[0]["step"], 0);
  EXPECT_EQ(index[3]["file"], "wpe_step000060.npy");
  EXPECT_TRUE(index[3].contains("val_loss"));
  const NpyArray w0 = read_npy(rd + "/snapshots/wpe_step000000.npy");
  EXPECT_EQ(w0.shape, (std::vector<int64_t>{16, 32}));
  // With each snapshot, layer 0's position-only kernels (2 heads x 16 positions) and their summaries.
  const NpyArray k60 = read_npy(rd + "/snapshots/attn_step000060.npy");
  EXPECT_EQ(k60.shape, (std::vector<int64_t>{2 * 16, 16}));
  for (int64_t row = 0; row < 32; ++row) {  // each query's attention sums to 1 over the keys up to it
    double sum = 0;
    for (int64_t j = 0; j < 16; ++j) sum += k60.data[row * 16 + j];
    EXPECT_NEAR(sum, 1.0, 1e-5) << row;
  }
  const auto usage = read_snapshot_usage(RunFolder(rd), 60);
  ASSERT_TRUE(usage.has_value());
  EXPECT_EQ((*usage)["attention_kernels"]["heads"].size(), 2u);
  EXPECT_EQ((*usage)["position_token"]["positions"], 16);
  // and the attention layer 0 pays on real val windows, the same windows at every snapshot
  const auto& text = (*usage)["data_attention"];
  ASSERT_EQ(text["heads"].size(), 2u);
  EXPECT_FALSE(text["mean_token_added"].get<bool>());
  EXPECT_EQ(text["heads"][0]["offset_profile"].size(), 16u);
  EXPECT_EQ(text["windows"], 4 * 16);  // min(train.eval_batches, 4) batches of train.batch_size windows
  EXPECT_FALSE(read_snapshot_usage(RunFolder(rd), 61).has_value());

  // The stored config is the effective one and loads back.
  const Config stored = config_from_yaml(read_checkpoint_meta(rd + "/checkpoints/latest.pt").config_yaml, "ckpt");
  EXPECT_EQ(stored.model.n_embd, 32);
  EXPECT_EQ(read_checkpoint_meta(rd + "/checkpoints/latest.pt").step, 60);
}

class TrainerOnDevice : public test::OnDevice {};

// Two runs of the same config, one stopped and resumed: every logged loss, the final table and the snapshots alike.
void expect_same_runs(const std::string& full, const std::string& resumed, int steps) {
  auto losses = [](const std::string& path) {
    std::vector<std::pair<int64_t, double>> out;
    for (const auto& m : read_jsonl(path))
      if (m.contains("loss")) out.emplace_back(m["step"].get<int64_t>(), m["loss"].get<double>());
    return out;
  };
  const auto a = losses(full + "/metrics.jsonl");
  const auto b = losses(resumed + "/metrics.jsonl");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(a[i].second, b[i].second) << "loss differs at step " << a[i].first;
  }
  const std::string table = fmt::format("/snapshots/wpe_step{:06d}.npy", steps);
  EXPECT_EQ(read_npy(full + table).data, read_npy(resumed + table).data) << "final position tables differ";
  EXPECT_EQ(read_jsonl(resumed + "/snapshots/index.jsonl").size(), read_jsonl(full + "/snapshots/index.jsonl").size());
}

// `r` stopped at step `stop_at` (as if interrupted), then resumed from its folder to its end.
void train_stopped_and_resumed(TrainRequest r, int64_t stop_at) {
  r.stop_at = stop_at;
  const TrainSummary stopped = train(r);
  EXPECT_FALSE(stopped.finished);
  TrainRequest resume;
  resume.resume_dir = stopped.run_dir;
  EXPECT_TRUE(train(resume).finished);
}

// A run stopped by a signal writes the table of the step it stops at beside that step's checkpoint, whatever
// snapshot.every (20 here). The run stops at 3 (--stop-at), then its resume is asked to stop before it starts: it
// trains step 3 and stops at 4 (a resume goes on from its checkpoint's step). The resume runs in a forked child, so
// that the stop handlers and the request stay out of the other tests; on one thread, so that no OpenMP pool is used
// across the fork.
TEST(Trainer, ASignalledStopSnapshotsTheStepItStopsAt) {
  TempDir dir;
  TrainRequest r = tiny_run(dir, "signal", 20);
  r.overrides.push_back("run.threads=1");
  r.stop_at = 3;
  ASSERT_EQ(train(r).steps, 3);
  TrainRequest resume;
  resume.resume_dir = dir / "signal";
  const test::ChildRun child = test::in_child(
      [&](int fd) {
        install_stop_handlers();
        ::raise(SIGINT);
        const TrainSummary s = train(resume);
        char line[64];
        const int n = std::snprintf(line, sizeof line, "steps %lld, signal %d\n", static_cast<long long>(s.steps),
                                    s.interrupted_by);
        (void)!::write(fd, line, static_cast<size_t>(n));
      },
      /*stderr_too=*/true);
  ASSERT_TRUE(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0) << "status " << child.status << child.out;
  EXPECT_NE(child.out.find("\nsteps 4, signal " + std::to_string(SIGINT) + "\n"), std::string::npos) << child.out;
  EXPECT_EQ(read_checkpoint_meta(dir / "signal/checkpoints/latest.pt").step, 4);
  EXPECT_TRUE(fs::is_regular_file(dir / "signal/snapshots/wpe_step000004.npy"));
  std::vector<int64_t> steps;
  for (const auto& line : read_jsonl(dir / "signal/snapshots/index.jsonl")) steps.push_back(line["step"]);
  EXPECT_EQ(steps, (std::vector<int64_t>{0, 4}));
}

// A step of train.grad_accum micro-batches trains batch_size x block_size x grad_accum tokens: each logged rate
// times its time per step gives them back (16 x 16 x 2 = 512), and so do the summary's rate and training time.
TEST(Trainer, TheTokenRateCountsEveryMicroBatch) {
  TempDir dir;
  TrainRequest r = tiny_run(dir, "accum", 10);
  r.overrides.push_back("train.grad_accum=2");
  const TrainSummary s = train(r);
  int rates = 0;
  for (const auto& m : read_jsonl(dir / "accum/metrics.jsonl")) {
    if (!m.contains("tokens_per_s")) continue;
    ++rates;
    const double tokens = m["tokens_per_s"].get<double>() * m["ms_per_step"].get<double>() / 1000;
    EXPECT_NEAR(tokens, 512.0, 512.0 * 1e-9) << "step " << m["step"];
  }
  EXPECT_EQ(rates, 2);  // steps 5 and 10 (train.log_every 5)
  EXPECT_NEAR(s.tokens_per_s * s.train_seconds, 512.0 * 10, 512.0 * 10 * 1e-9);
}

// On a GPU, dropout draws from the CUDA generator, whose state the checkpoint keeps too.
TEST_P(TrainerOnDevice, ResumedRunMatchesUninterruptedRunBitForBit) {
  TempDir dir;
  TrainRequest full = tiny_run(dir, "full", 40);
  full.overrides.push_back("model.dropout=0.1");  // the RNG state of dropout must survive too
  full.overrides.push_back("run.device=" + device_name());
  train(full);

  TrainRequest part = tiny_run(dir, "part", 40);
  part.overrides.push_back("model.dropout=0.1");
  part.overrides.push_back("run.device=" + device_name());
  part.stop_at = 25;  // not a checkpoint_every multiple
  const TrainSummary stopped = train(part);
  EXPECT_FALSE(stopped.finished);
  EXPECT_EQ(read_checkpoint_meta(dir / "part/checkpoints/latest.pt").step, 25);

  TrainRequest resume;
  resume.resume_dir = dir / "part";
  const TrainSummary resumed = train(resume);
  EXPECT_TRUE(resumed.finished);

  expect_same_runs(dir / "full", dir / "part", 40);
}

POSLAB_ON_EVERY_DEVICE(TrainerOnDevice);

// best.pt holds the run's best eval: a resume starts from the best val loss its checkpoint kept, so an eval after
// the resume that is worse than one before it leaves best.pt as the uninterrupted run's (a resume that forgot the
// best so far would write the worse one over it). With lr held high (no schedule: min_lr = lr, no warmup) the val loss
// rises somewhere in 40 steps on any CPU; the runs end at the first eval that is worse than every one before it.
TEST(Trainer, AResumeKeepsTheBestCheckpointOfEvalsBeforeIt) {
  TempDir dir;
  auto request = [&](const std::string& name, int steps) {
    TrainRequest r = tiny_run(dir, name, steps);
    for (const char* o : {"train.lr=3e-2", "train.min_lr=3e-2", "train.warmup_steps=0", "train.eval_every=5"})
      r.overrides.push_back(o);
    return r;
  };
  train(request("probe", 40));
  std::vector<std::pair<int64_t, double>> evals;  // (step, val loss)
  for (const auto& m : read_jsonl(dir / "probe/metrics.jsonl"))
    if (m.contains("val_loss")) evals.emplace_back(m["step"].get<int64_t>(), m["val_loss"].get<double>());
  size_t worse = 0;  // the first eval above the best before it
  double best = INFINITY;
  std::string seen;
  for (size_t e = 0; e < evals.size(); ++e) {
    seen += fmt::format("{} {:.4f}; ", evals[e].first, evals[e].second);
    if (e > 0 && worse == 0 && evals[e].second > best) worse = e;
    best = std::min(best, evals[e].second);
  }
  ASSERT_GT(worse, 0u) << "the val loss fell at every eval: " << seen;
  const int64_t end = evals[worse].first;

  train(request("full", static_cast<int>(end)));
  const CheckpointMeta full_best = read_checkpoint_meta(dir / "full/checkpoints/best.pt");
  EXPECT_LT(full_best.step, end) << seen;
  train_stopped_and_resumed(request("part", static_cast<int>(end)), evals[worse - 1].first + 1);  // after the eval
  const CheckpointMeta part_best = read_checkpoint_meta(dir / "part/checkpoints/best.pt");
  EXPECT_EQ(part_best.step, full_best.step) << seen;
  EXPECT_EQ(part_best.best_val_loss, full_best.best_val_loss);
  EXPECT_EQ(read_checkpoint_meta(dir / "part/checkpoints/latest.pt").best_val_loss,
            read_checkpoint_meta(dir / "full/checkpoints/latest.pt").best_val_loss);
}

// --stop-at names a step the run reaches: a new run may stop at step 0 (its first checkpoint); a resumed run at or
// past it is an error naming both steps, not a run trained to its end; a step past train.max_steps ends at it.
TEST(Trainer, StopAtStepZeroAStepAlreadyPassedAndOnePastTheEnd) {
  TempDir dir;
  TrainRequest r = tiny_run(dir, "stop", 6);
  r.stop_at = 0;
  const TrainSummary zero = train(r);
  EXPECT_FALSE(zero.finished);
  EXPECT_EQ(zero.steps, 0);
  EXPECT_EQ(read_checkpoint_meta(dir / "stop/checkpoints/latest.pt").step, 0);

  TrainRequest resume;
  resume.resume_dir = dir / "stop";
  resume.stop_at = 3;
  {
    // stopped between evals (train.eval_every 20): its losses are step 0's, and the run and its checkpoint say so
    CapturedLog log;
    const TrainSummary three = train(resume);
    EXPECT_EQ(three.steps, 3);
    EXPECT_EQ(three.eval_step, 0);
    EXPECT_EQ(read_checkpoint_meta(dir / "stop/checkpoints/latest.pt").eval_step, 0);
    // the losses step 0's eval logged, restored from the checkpoint (not a NaN or an estimate of another step)
    const auto step0 = read_jsonl(dir / "stop/metrics.jsonl").at(0);
    ASSERT_EQ(step0["step"], 0);
    EXPECT_EQ(three.val_loss, step0["val_loss"].get<double>());
    EXPECT_EQ(three.train_loss, step0["train_loss"].get<double>());
    EXPECT_NE(log.str().find(fmt::format("done: 3 steps | the eval of step 0: train {:.4f} | val {:.4f} |",
                                         three.train_loss, three.val_loss)),
              std::string::npos)
        << log.str();
  }
  for (int64_t passed : {0, 3}) {
    resume.stop_at = passed;
    try {
      train(resume);
      FAIL() << "expected an error for --stop-at " << passed;
    } catch (const Error& e) {
      EXPECT_NE(
          std::string(e.what()).find(fmt::format("--stop-at {}: {} is already at step 3", passed, resume.resume_dir)),
          std::string::npos)
          << e.what();
      EXPECT_NE(e.hint().find("train.max_steps = 6"), std::string::npos) << e.hint();
    }
    EXPECT_EQ(read_checkpoint_meta(dir / "stop/checkpoints/latest.pt").step, 3) << "nothing trained";
  }
  resume.stop_at = 100;
  const TrainSummary end = train(resume);
  EXPECT_TRUE(end.finished);
  EXPECT_EQ(end.steps, 6);
  EXPECT_EQ(end.eval_step, 6);  // the last step's eval
  EXPECT_EQ(read_checkpoint_meta(dir / "stop/checkpoints/latest.pt").eval_step, 6);

  // train.max_steps lowered below the run's step: an error, and the run's logs and config as they were.
  const std::string metrics = read_file(dir / "stop/metrics.jsonl"), config = read_file(dir / "stop/config.yaml");
  TrainRequest lower;
  lower.resume_dir = dir / "stop";
  lower.overrides = {"train.max_steps=4"};
  try {
    train(lower);
    FAIL() << "a lower train.max_steps was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train.max_steps = 4 (--set), but the run is at step 6 already"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_file(dir / "stop/metrics.jsonl"), metrics);
  EXPECT_EQ(read_file(dir / "stop/config.yaml"), config);

  // Another run's checkpoint copied in (here: another seed's) is refused before anything changes.
  TrainRequest other = tiny_run(dir, "other", 3);
  other.overrides.push_back("run.seed=5");
  train(other);
  fs::copy_file(dir / "other/checkpoints/latest.pt", dir / "stop/checkpoints/latest.pt",
                fs::copy_options::overwrite_existing);
  TrainRequest foreign;
  foreign.resume_dir = dir / "stop";
  try {
    train(foreign);
    FAIL() << "another run's checkpoint was resumed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "a checkpoint of another run than " + dir / "stop/config.yaml" +
                  " records (run.name other in the checkpoint, stop in config.yaml; run.seed 5 in the checkpoint, "
                  "1337 in config.yaml)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_file(dir / "stop/metrics.jsonl"), metrics);
  EXPECT_EQ(read_file(dir / "stop/config.yaml"), config);
}

// The whole-model step resumes bit for bit too, in float32 and in bf16 (the products through oneDNN, which it needs),
// with the batch cut in 2 slices; the run folder records that it ran the direct step.
TEST(Trainer, TheDirectStepResumesBitForBitInBothDtypes) {
  // the tests' main sets "default"; these runs force the paths
  test::ScopedEnv forced("POSLAB_KERNELS", "bf16_products=onednn,step=direct");
  for (const char* dtype : {"float32", "bfloat16"}) {
    SCOPED_TRACE(dtype);
    TempDir dir;
    auto request = [&](const char* name) {
      TrainRequest r = tiny_run(dir, name, 30);
      r.overrides.push_back(std::string("train.dtype=") + dtype);
      r.overrides.push_back("run.batch_split=2");
      return r;
    };
    train(request("full"));
    train_stopped_and_resumed(request("part"), 17);
    expect_same_runs(dir / "full", dir / "part", 30);
    const std::string paths = read_file(dir / "part/kernel_paths.json");
    EXPECT_NE(paths.find("step=direct"), std::string::npos) << paths;
    EXPECT_NE(paths.find("batch_split=threads"), std::string::npos) << paths;
  }
}

TEST(Trainer, ARunFolderIsNeverReusedByAFreshRun) {
  TempDir dir;
  train(tiny_run(dir, "once", 5));
  const auto before = fs::file_size(dir / "once/metrics.jsonl");
  const size_t records = read_jsonl(dir / "once/metrics.jsonl").size();
  try {
    train(tiny_run(dir, "once", 5));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "once"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("--resume"), std::string::npos) << e.hint();
  }
  EXPECT_EQ(fs::file_size(dir / "once/metrics.jsonl"), before);

  // Its latest.pt lost (deleted, moved) after it went on: neither a fresh run nor --resume may start it again from
  // step 0 over what it logged; the error names the last step and the way on from best.pt, and nothing changes.
  const std::string last = "once/snapshots/wpe_step000005.npy";
  const NpyArray first_table = read_npy(dir / last);
  const auto best_before = fs::last_write_time(dir / "once/checkpoints/best.pt");
  fs::remove(dir / "once/checkpoints/latest.pt");
  TrainRequest again;
  again.resume_dir = dir / "once";
  for (bool resume : {false, true}) {
    try {
      train(resume ? again : tiny_run(dir, "once", 5));
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("latest.pt is missing, but the run logged steps up to 5"), std::string::npos)
          << e.what();
      EXPECT_NE(e.hint().find("to go on from best.pt (step"), std::string::npos) << e.hint();
    }
    EXPECT_EQ(fs::file_size(dir / "once/metrics.jsonl"), before);
    EXPECT_EQ(fs::last_write_time(dir / "once/checkpoints/best.pt"), best_before);
    EXPECT_EQ(read_npy(dir / last).data, first_table.data);
  }

  // Stopped before its first checkpoint (killed in step 0's writes, or its disk full: nothing logged past step 0):
  // a fresh run of the name is refused and pointed to --resume, which starts the run again in its folder — the
  // same run as the first, its logs not doubled.
  truncate_logs_after(RunFolder(dir / "once"), 0);
  fs::remove(dir / last);
  const auto truncated = fs::file_size(dir / "once/metrics.jsonl");
  try {
    train(tiny_run(dir, "once", 5));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stopped before its first checkpoint"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("poslab train --resume " + (dir / "once")), std::string::npos) << e.hint();
  }
  EXPECT_EQ(fs::file_size(dir / "once/metrics.jsonl"), truncated);
  EXPECT_EQ(train(again).steps, 5);
  EXPECT_EQ(read_npy(dir / last).data, first_table.data) << "the restarted run differs from the first";
  EXPECT_EQ(read_jsonl(dir / "once/metrics.jsonl").size(), records);
  EXPECT_TRUE(fs::exists(dir / "once/checkpoints/latest.pt"));
}

// A snapshot between checkpoints that cannot be written (a full disk, a file-size limit) stops the run as a
// checkpoint's would, its hint naming the resume; the resume writes the snapshot again. (Its temporary file's place
// taken by a folder makes the write fail.)
TEST(Trainer, ASnapshotThatCannotBeWrittenStopsTheRunAndTheResumeWritesIt) {
  TempDir dir;
  TrainRequest r = tiny_run(dir, "snap", 8);
  r.overrides.insert(r.overrides.end(), {"snapshot.every=2", "train.checkpoint_every=4", "train.eval_every=4"});
  r.stop_at = 4;
  train(r);
  const std::string blocked =
      fmt::format("{}/snap/snapshots/wpe_step000006.npy.tmp.{}", dir.str(), static_cast<long>(::getpid()));
  fs::create_directories(fs::path(blocked) / "in_the_way");
  TrainRequest resume;
  resume.resume_dir = dir / "snap";
  try {
    train(resume);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("snapshots/wpe_step000006.npy"), std::string::npos) << e.what();
    EXPECT_EQ(e.hint(),
              "fix what stopped the write (free space, permissions; dmesg for a failing disk), then poslab "
              "train --resume " +
                  (dir / "snap") + ": the previous checkpoint is intact, and the run goes on from it");
  }
  EXPECT_FALSE(fs::exists(dir / "snap/snapshots/wpe_step000006.npy"));
  fs::remove_all(blocked);
  EXPECT_EQ(train(resume).steps, 8);
  std::vector<int64_t> steps;
  for (const auto& line : read_jsonl(dir / "snap/snapshots/index.jsonl")) steps.push_back(line["step"]);
  EXPECT_EQ(steps, (std::vector<int64_t>{0, 2, 4, 6, 8}));
  EXPECT_TRUE(fs::is_regular_file(dir / "snap/snapshots/wpe_step000006.npy"));
  EXPECT_TRUE(fs::is_regular_file(dir / "snap/snapshots/wpe_step000006.json")) << "its analysis";
}

TEST(Trainer, ResumeErrors) {
  TempDir dir;
  TrainRequest r;
  r.resume_dir = dir / "nothing-here";
  const std::string none = test::error_of([&] { train(r); });
  EXPECT_EQ(none.rfind("--resume " + r.resume_dir + ": not a run folder (it holds no config.yaml", 0), 0u) << none;
  train(tiny_run(dir, "done", 5));
  r.resume_dir = dir / "done";
  r.overrides = {"model.n_embd=64"};  // another architecture than the checkpoint's
  const std::string config_first = read_file(dir / "done/config.yaml");
  try {
    train(r);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.n_embd 32 in the checkpoint vs 64"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_file(dir / "done/config.yaml"), config_first) << "config.yaml took the refused override";
  // The table's own learning-rate group cannot appear or vanish on resume (the optimizer state's groups), and the
  // run folder is left as it was.
  r.overrides = {"train.position_lr_scale=10"};
  const std::string config_before = read_file(dir / "done/config.yaml");
  try {
    train(r);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train.position_lr_scale 1 in the checkpoint vs 10"), std::string::npos)
        << e.what();
    EXPECT_NE(e.hint().find("--init-from"), std::string::npos) << e.hint();
  }
  EXPECT_EQ(read_file(dir / "done/config.yaml"), config_before);
  // What the checkpoint fixed when the run began (its seed, split and tokenizer) and where its folder is: a --set of
  // them was recorded in config.yaml without effect. Each is refused with what to do instead; naming the run's own
  // folder (as a sweep does) is no change.
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"run.seed=5", "run.seed = 1337; the run's random streams go on from the checkpoint"},
      {"data.val_fraction=0.3", "data.val_fraction = 0.1; the split between training and validation tokens"},
      {"data.tokenizer.type=bpe", "a resumed run keeps the tokenizer stored in its checkpoint"},
      {"train.init_from=" + (dir / "done/checkpoints/best.pt"), "a resumed run goes on from its checkpoint"},
      {"run.name=elsewhere", "--set run.name=elsewhere: a resumed run stays in its folder " + dir / "done"},
      {"run.out_dir=" + dir / "other", "--set run.out_dir=" + dir / "other" + ": a resumed run stays in its folder"},
  };
  for (const auto& [set, message] : refused) {
    r.overrides = {set};
    try {
      train(r);
      ADD_FAILURE() << set << " was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      EXPECT_NE(e.hint().find("leave"), std::string::npos) << e.hint();
    }
    EXPECT_EQ(read_file(dir / "done/config.yaml"), config_before) << set;
  }
  // Extending a finished run with more steps works, its folder named as a sweep names it.
  r.overrides = {"train.max_steps=6", "run.out_dir=" + dir.str(), "run.name=done"};
  EXPECT_EQ(train(r).steps, 6);
  r.overrides = {"train.max_steps=8"};
  EXPECT_EQ(train(r).steps, 8);
  // Weights only (poslab extend's checkpoint) cannot continue a run: said before the corpus is read (gone here) and
  // the kernel paths measured.
  ExtendRequest ext;
  ext.checkpoint = dir / "done/checkpoints/latest.pt";
  ext.to = 24;
  const std::string weights = extend_checkpoint(ext).checkpoint;
  EXPECT_FALSE(read_checkpoint_meta(weights).has_optimizer_state);
  EXPECT_TRUE(read_checkpoint_meta(dir / "done/checkpoints/latest.pt").has_optimizer_state);
  std::filesystem::create_directories(dir / "weights/checkpoints");
  std::filesystem::copy_file(weights, dir / "weights/checkpoints/latest.pt");
  std::filesystem::remove(dir / "corpus.txt");
  r.resume_dir = dir / "weights";
  r.overrides.clear();
  const std::string weights_only = test::error_of([&] { train(r); });  // "what | hint"
  EXPECT_NE(weights_only.find("latest.pt: the checkpoint holds no optimizer state"), std::string::npos) << weights_only;
  const std::string hint =
      " | start a new run from its weights: poslab train --init-from " + dir / "weights/checkpoints/latest.pt";
  EXPECT_EQ(weights_only.substr(weights_only.size() - std::min(weights_only.size(), hint.size())), hint);
}

TEST(Trainer, OneTrainerPerRunFolder) {
  TempDir dir;
  std::filesystem::create_directories(dir / "busy");
  test::write_text(dir / "busy/lock", std::to_string(::getpid()) + " " + host_name() + "\n");
  try {
    train(tiny_run(dir, "busy", 3));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another trainer (pid " + std::to_string(::getpid()) + ")"), std::string::npos)
        << e.what();
  }
  // A lock left by a process that is gone is stale: the run takes it over, and releases it at the end.
  const pid_t child = test::dead_pid();
  std::filesystem::create_directories(dir / "stale");
  test::write_text(dir / "stale/lock", std::to_string(child) + " " + host_name() + "\n");
  EXPECT_TRUE(train(tiny_run(dir, "stale", 3)).finished);
  EXPECT_FALSE(fs::exists(dir / "stale/lock"));
}

// A new run whose start is refused after its folder was made (the corpus holds no text, the tokenizer cannot be
// trained on it) takes the folder away again, with the folders above it that it made; a folder that was there
// before stays, with what it held, and the same command, its input fixed, trains in it.
TEST(Trainer, AStartTheDataRefusesLeavesNoFolderBehind) {
  TempDir dir;
  test::write_text(dir / "empty.txt", "");
  TrainRequest empty = tiny_run(dir, "empty", 3);
  empty.overrides.push_back("run.out_dir=" + (dir / "new/runs"));
  empty.overrides.push_back("data.corpus=" + (dir / "empty.txt"));
  const std::string msg = test::error_of([&] { train(empty); });
  EXPECT_NE(msg.find("no text found"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dir / "new")) << "run.out_dir's folders, made by the start, are gone too";

  test::write_text(dir / "short.txt", "hello world\n");
  TrainRequest bpe = tiny_run(dir, "bpe", 3);
  bpe.overrides.push_back("data.corpus=" + (dir / "short.txt"));
  bpe.overrides.push_back("data.tokenizer.type=bpe");
  bpe.overrides.push_back("data.tokenizer.vocab_size=2048");
  const std::string bpe_msg = test::error_of([&] { train(bpe); });
  EXPECT_NE(bpe_msg.find("more pieces than a bpe tokenizer finds in the corpus"), std::string::npos) << bpe_msg;
  EXPECT_FALSE(fs::exists(dir / "bpe"));
  EXPECT_TRUE(fs::exists(dir / "corpus.txt")) << "run.out_dir was there before: it stays";

  fs::create_directories(dir / "mine");
  test::write_text(dir / "mine/notes.txt", "kept\n");
  TrainRequest mine = tiny_run(dir, "mine", 3);
  mine.overrides.push_back("data.corpus=" + (dir / "empty.txt"));
  EXPECT_NE(test::error_of([&] { train(mine); }).find("no text found"), std::string::npos);
  EXPECT_EQ(read_file(dir / "mine/notes.txt"), "kept\n");
  std::set<std::string> left;  // what the refused start wrote went with it: nothing a new run would write over
  for (const auto& e : fs::directory_iterator(dir / "mine")) left.insert(e.path().filename().string());
  EXPECT_EQ(left, std::set<std::string>{"notes.txt"});
  mine.overrides.push_back("data.corpus=" + (dir / "corpus.txt"));  // the same command, its input fixed
  EXPECT_TRUE(train(mine).finished);
}

// A folder holding files a run writes, but no run's log (a start stopped while it set up, files put there by hand):
// a new run there is refused, naming them, and nothing in it changes; a stopped start's config.yaml points to the
// resume, which starts it again there.
TEST(Trainer, ANewRunWritesOverNoFileOfItsFolder) {
  TempDir dir;
  fs::create_directories(dir / "kept/snapshots");
  test::write_text(dir / "kept/kernel_paths.json", "mine\n");
  test::write_text(dir / "kept/snapshots/wpe_step000000.npy", "mine\n");
  const std::string refused = test::error_of([&] { train(tiny_run(dir, "kept", 2)); });
  EXPECT_NE(refused.find(dir / "kept" + ": holds what a new run writes (kernel_paths.json, snapshots), which it "
                                        "would write over"),
            std::string::npos)
      << refused;
  EXPECT_EQ(refused.find("--resume"), std::string::npos) << "no run's config to resume: " << refused;
  EXPECT_EQ(read_file(dir / "kept/kernel_paths.json"), "mine\n");
  EXPECT_EQ(read_file(dir / "kept/snapshots/wpe_step000000.npy"), "mine\n");
  EXPECT_FALSE(fs::exists(dir / "kept/config.yaml"));

  train(tiny_run(dir, "set-up", 2));  // a start that stopped once its config.yaml was written
  for (const char* gone : {"metrics.jsonl", "checkpoints", "snapshots", "report", "tensorboard", "kernel_paths.json"})
    fs::remove_all(fs::path(dir / "set-up") / gone);
  const std::string config = read_file(dir / "set-up/config.yaml");
  const std::string stopped = test::error_of([&] { train(tiny_run(dir, "set-up", 2)); });
  EXPECT_NE(stopped.find("holds what a new run writes (config.yaml)"), std::string::npos) << stopped;
  EXPECT_NE(stopped.find("poslab train --resume " + (dir / "set-up")), std::string::npos) << stopped;
  EXPECT_EQ(read_file(dir / "set-up/config.yaml"), config);
  TrainRequest resume;
  resume.resume_dir = dir / "set-up";
  EXPECT_TRUE(train(resume).finished);
}

// A resume reads best.pt too: one damaged on disk is said, and written again at the next eval (it would otherwise
// stay damaged while no eval improved on its loss). Its latest.pt lost as well, the error is latest.pt's.
TEST(Trainer, ADamagedBestIsSaidAtTheResumeAndWrittenAgain) {
  TempDir dir;
  train(tiny_run(dir, "best", 4));
  const std::string best = dir / "best/checkpoints/best.pt";
  std::string bytes = read_file(best);
  test::write_text(best, bytes.substr(0, bytes.size() / 2));
  TrainRequest again;
  again.resume_dir = dir / "best";
  again.overrides = {"train.max_steps=6"};
  CapturedLog log;
  EXPECT_EQ(train(again).steps, 6);
  EXPECT_NE(log.str().find(best + ": not a readable checkpoint (damaged, truncated or another format): the run's next "
                                  "eval writes it again, with the best val loss from here on"),
            std::string::npos)
      << log.str();
  EXPECT_EQ(read_checkpoint_meta(best).step, 6);

  test::write_text(best, bytes.substr(0, bytes.size() / 2));
  fs::remove(dir / "best/checkpoints/latest.pt");
  const std::string lost = test::error_of([&] { train(again); });
  EXPECT_NE(lost.find("latest.pt is missing, but the run logged steps up to 6"), std::string::npos) << lost;
  EXPECT_NE(lost.find(best + " does not read either (damaged)"), std::string::npos) << lost;
}

// A run folder that is there is locked before it is looked at: a second start while the first sets up (its
// config.yaml written, no log yet) meets the first's lock, not "holds what a new run writes", and changes nothing.
TEST(Trainer, AStartMeetsTheLockOfOneSettingUpInItsFolder) {
  TempDir dir;
  fs::create_directories(dir / "busy");
  test::write_text(dir / "busy/config.yaml", "setting up\n");
  const RunLock first(RunFolder(dir / "busy").lock());
  const std::string refused = test::error_of([&] { train(tiny_run(dir, "busy", 2)); });
  EXPECT_NE(refused.find(dir / "busy" + ": another trainer (pid " + std::to_string(::getpid()) +
                         ") is using this run folder"),
            std::string::npos)
      << refused;
  EXPECT_EQ(read_file(dir / "busy/config.yaml"), "setting up\n");
}

// A subfolder that is a link to an empty folder (snapshots on another disk) is free, and the run writes through it; a
// link to a folder that holds files is counted as what it holds.
TEST(Trainer, ASubfolderLinkedElsewhereIsCountedAsWhatItHolds) {
  TempDir dir;
  fs::create_directories(dir / "elsewhere");
  fs::create_directories(dir / "linked");
  fs::create_directory_symlink(dir / "elsewhere", dir / "linked/snapshots");
  train(tiny_run(dir, "linked", 2));
  EXPECT_TRUE(fs::is_symlink(dir / "linked/snapshots"));
  EXPECT_TRUE(fs::exists(dir / "elsewhere/wpe_step000002.npy"));
  fs::create_directories(dir / "again");
  fs::create_directories(dir / "full");
  test::write_text(dir / "full/mine.npy", "mine\n");
  fs::create_directory_symlink(dir / "full", dir / "again/snapshots");
  const std::string refused = test::error_of([&] { train(tiny_run(dir, "again", 2)); });
  EXPECT_NE(refused.find("holds what a new run writes (snapshots)"), std::string::npos) << refused;
  EXPECT_EQ(read_file(dir / "full/mine.npy"), "mine\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "full"), fs::directory_iterator()), 1);
}

TEST(Trainer, NonFiniteLossStopsOrIsSkipped) {
  TempDir dir;
  TrainRequest r = tiny_run(dir, "nan", 4);
  r.overrides.push_back("model.wpe_init_std=1e300");  // an infinite position table: NaN from the first step
  try {
    train(r);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("step 0: non-finite loss"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("train.on_nonfinite: skip"), std::string::npos) << e.hint();
  }
  EXPECT_FALSE(fs::exists(dir / "nan/lock")) << "the lock is released on errors too";
  TrainRequest skip = tiny_run(dir, "skip", 4);
  skip.overrides.push_back("model.wpe_init_std=1e300");
  skip.overrides.push_back("train.on_nonfinite=skip");
  std::string log;
  TrainSummary s;
  {
    const CapturedLog captured;
    s = train(skip);
    log = captured.str();
  }
  EXPECT_TRUE(s.finished);
  EXPECT_EQ(s.skipped_steps, 4);
  EXPECT_NE(log.find("4 steps were skipped for non-finite loss or gradient"), std::string::npos) << log;
  TrainRequest one = tiny_run(dir, "skip-one", 1);  // counted in words
  one.overrides.push_back("model.wpe_init_std=1e300");
  one.overrides.push_back("train.on_nonfinite=skip");
  {
    const CapturedLog captured;
    EXPECT_EQ(train(one).skipped_steps, 1);
    log = captured.str();
  }
  EXPECT_NE(log.find("1 step was skipped for non-finite loss or gradient"), std::string::npos) << log;
}

// The step on the device (train.adamw fused), on the CPU here and on a GPU in the CUDA case: a run stopped and
// resumed equals the uninterrupted one bit for bit (the step counts travel in the checkpoint), and a non-finite step,
// skipped on the device, is read at the next log line: it stops the run, or is counted.
TEST_P(TrainerOnDevice, TheStepOnTheDeviceResumesBitForBitAndReadsItsSkips) {
  TempDir dir;
  const std::string why = DeviceAdamW::unsupported(device());
  auto request = [&](const char* name, int steps) {
    TrainRequest r = tiny_run(dir, name, steps);
    r.overrides.push_back("train.adamw=fused");
    r.overrides.push_back("run.device=" + device_name());
    return r;
  };
  if (!why.empty()) {
    std::cout << "[ info ] this LibTorch has no fused AdamW (" << why << "): its error is what is tested\n";
    const std::string msg = test::error_of([&] { train(request("none", 4)); });
    EXPECT_NE(msg.find("train.adamw = fused: "), std::string::npos) << msg;
    EXPECT_FALSE(fs::exists(dir / "none")) << "stopped before anything was written";
    return;
  }
  train(request("full", 30));
  train_stopped_and_resumed(request("part", 30), 17);
  expect_same_runs(dir / "full", dir / "part", 30);

  TrainRequest nan = request("nan", 4);
  nan.overrides.push_back("model.wpe_init_std=1e300");  // an infinite position table: NaN from the first step
  const std::string msg = test::error_of([&] { train(nan); });
  EXPECT_NE(msg.find("1 of steps 0-0: non-finite loss or gradient, the update skipped on the device"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("train.on_nonfinite: skip"), std::string::npos) << msg;
  TrainRequest skip = request("skip", 4);
  skip.overrides.push_back("model.wpe_init_std=1e300");
  skip.overrides.push_back("train.on_nonfinite=skip");
  const TrainSummary s = train(skip);
  EXPECT_TRUE(s.finished);
  EXPECT_EQ(s.skipped_steps, 4);
}

// The step as a CUDA graph (train.cuda_graph): on a GPU a run trains as the eager step does, bit for bit, and a run
// stopped and resumed (its first steps after the resume eager again, then captured anew) equals them; elsewhere the
// key is an error naming the device, before anything is written.
TEST_P(TrainerOnDevice, ACudaGraphTrainsAsTheEagerStepAndResumesBitForBit) {
  TempDir dir;
  auto request = [&](const char* name, int steps, bool graph) {
    TrainRequest r = tiny_run(dir, name, steps);  // train.adamw auto: fused on a GPU
    r.overrides.push_back("run.device=" + device_name());
    r.overrides.push_back(graph ? "train.cuda_graph=true" : "train.cuda_graph=false");
    return r;
  };
  if (!is_cuda()) {
    const std::string msg = test::error_of([&] { train(request("cpu", 4, true)); });
    EXPECT_NE(msg.find("train.cuda_graph = true: a CUDA graph runs on a GPU, and run.device is cpu"), std::string::npos)
        << msg;
    EXPECT_FALSE(fs::exists(dir / "cpu")) << "stopped before anything was written";
    return;
  }
  train(request("eager", 30, false));
  train(request("graph", 30, true));
  expect_same_runs(dir / "eager", dir / "graph", 30);
  train_stopped_and_resumed(request("part", 30, true), 17);
  expect_same_runs(dir / "eager", dir / "part", 30);
}

// configs/circles.yaml, a few steps on a generated corpus: its shape trains, its table with 10x the others' learning
// rate, snapshotted and analysed.
TEST(Trainer, TheCirclesConfigTrainsAFewSteps) {
  TempDir dir;
  test::write_text(dir / "corpus.txt", test::generated_corpus(2000));
  TrainRequest r;
  r.config_path = (fs::path(test::source_dir()) / "configs/circles.yaml").string();
  r.overrides = {"run.out_dir=" + dir.str(),
                 "run.report=false",
                 "run.device=cpu",
                 "run.tensorboard=false",
                 "data.corpus=" + (dir / "corpus.txt"),
                 "data.cache_dir=" + (dir / "cache"),
                 "data.tokenizer.type=char",
                 "train.max_steps=4",
                 "train.eval_every=2",
                 "train.eval_batches=1",
                 "snapshot.every=2"};
  const TrainSummary sum = train(r);
  EXPECT_TRUE(sum.finished);
  EXPECT_TRUE(std::isfinite(sum.val_loss));
  const Config cfg = load_config((fs::path(sum.run_dir) / "config.yaml").string());
  EXPECT_EQ(cfg.run.name, "circles");
  EXPECT_EQ(cfg.model.position, "learned");
  EXPECT_GT(cfg.train.position_lr_scale, 1.0);
  const NpyArray last = read_npy(fs::path(sum.run_dir) / "snapshots/wpe_step000004.npy");
  EXPECT_EQ(last.shape[0], cfg.model.block_size);
  EXPECT_TRUE(fs::is_regular_file(fs::path(sum.run_dir) / "snapshots/wpe_step000004.json")) << "its analysis";
}

TEST(Trainer, ControlsTrainToo) {
  TempDir dir;
  TrainRequest r = tiny_run(dir, "none", 10);
  r.overrides.push_back("model.position=none");
  train(r);
  EXPECT_TRUE(fs::exists(dir / "none/checkpoints/latest.pt"));
  EXPECT_FALSE(fs::exists(dir / "none/snapshots"));  // no table to snapshot
  TrainRequest s = tiny_run(dir, "sin", 10);
  s.overrides.push_back("model.position=sinusoidal");
  s.overrides.push_back("train.dtype=bfloat16");
  const TrainSummary sum = train(s);
  EXPECT_TRUE(std::isfinite(sum.val_loss));
  EXPECT_EQ(read_npy(dir / "sin/snapshots/wpe_step000000.npy").data,
            read_npy(dir / "sin/snapshots/wpe_step000010.npy").data);
}

// A resumed run keeps its own tokenizer, even when poslab would train another one today (here: the cached
// tokenizer is swapped for one of another vocabulary, as a change of poslab's tokenizer recipe would); a changed
// corpus is an error naming it.
TEST(Trainer, ResumeKeepsItsTokenizerAndNoticesAChangedCorpus) {
  TempDir dir;
  TrainRequest part = tiny_run(dir, "keep", 10);
  part.stop_at = 4;
  train(part);
  Config other = load_config("", part.overrides);
  other.data.tokenizer.type = "bpe";
  other.data.tokenizer.vocab_size = 300;
  other.data.cache_dir = dir / "other-cache";
  const std::string other_bytes = prepare_tokens(other, 1).tokenizer.model_bytes();
  int swapped = 0;
  for (const auto& e : fs::directory_iterator(dir / "cache"))
    if (e.path().filename().string().rfind("tokenizer-", 0) == 0) {
      test::write_text(e.path().string(), other_bytes);
      ++swapped;
    }
  ASSERT_EQ(swapped, 1);
  TrainRequest resume;
  resume.resume_dir = dir / "keep";
  EXPECT_EQ(train(resume).steps, 10);
  const Config stored =
      config_from_yaml(read_checkpoint_meta(dir / "keep/checkpoints/latest.pt").config_yaml, "stored");
  EXPECT_EQ(stored.data.tokenizer.type, "char");

  TrainRequest again = tiny_run(dir, "changed", 10);
  again.overrides.push_back("data.cache_dir=" + (dir / "cache2"));  // not the cache holding the swapped tokenizer
  again.stop_at = 4;
  train(again);
  test::write_text(dir / "corpus.txt", test::generated_corpus(2000, /*seed=*/42));
  TrainRequest changed;
  changed.resume_dir = dir / "changed";
  try {
    train(changed);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the corpus changed since the checkpoint was written"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("corpus.txt"), std::string::npos) << e.what();
  }
}

// A new run from another's weights tokenizes with that checkpoint's tokenizer: a tokenizer key given otherwise is
// said not to be read, and config.yaml and the checkpoint record the tokenizer the run used (not the key given).
TEST(Trainer, ARunFromAnotherRunsWeightsRecordsTheTokenizerItUses) {
  TempDir dir;
  train(tiny_run(dir, "source", 2));
  TrainRequest from = tiny_run(dir, "from", 2);
  from.init_from = dir / "source/checkpoints/latest.pt";
  from.overrides.push_back("data.tokenizer.type=bpe");
  from.overrides.push_back("data.tokenizer.vocab_size=300");
  CapturedLog log;
  EXPECT_EQ(train(from).steps, 2);
  for (const char* key : {"data.tokenizer.type = bpe", "data.tokenizer.vocab_size = 300"})
    EXPECT_NE(log.str().find(std::string("--set: ") + key +
                             " is not read: a run from train.init_from's weights "
                             "tokenizes with the tokenizer of " +
                             from.init_from + " (char)"),
              std::string::npos)
        << key << "\n"
        << log.str();
  for (const std::string& config :
       {read_file(dir / "from/config.yaml"), read_checkpoint_meta(dir / "from/checkpoints/latest.pt").config_yaml}) {
    const Config c = config_from_yaml(config, "recorded");
    EXPECT_EQ(c.data.tokenizer.type, "char");
    EXPECT_EQ(c.data.tokenizer.vocab_size, TokenizerConfig().vocab_size);
  }
}

// A run from another's weights that stopped before its first checkpoint starts again in its folder with the same
// tokenizer: a tokenizer key set on that --resume is said not to be read, and the recorded config keeps the one used.
TEST(Trainer, ARunFromAnotherRunsWeightsStartedAgainKeepsItsTokenizer) {
  TempDir dir;
  train(tiny_run(dir, "source", 2));
  TrainRequest from = tiny_run(dir, "from", 2);
  from.init_from = dir / "source/checkpoints/latest.pt";
  train(from);
  for (const char* gone : {"metrics.jsonl", "checkpoints", "snapshots", "report", "tensorboard", "kernel_paths.json"})
    fs::remove_all(fs::path(dir / "from") / gone);  // stopped once its config.yaml was written
  TrainRequest again;
  again.resume_dir = dir / "from";
  again.overrides = {"data.tokenizer.type=bpe"};
  CapturedLog log;
  EXPECT_EQ(train(again).steps, 2);
  EXPECT_NE(log.str().find("--set: data.tokenizer.type = bpe is not read: a run from train.init_from's weights "
                           "tokenizes with the tokenizer of " +
                           from.init_from + " (char)"),
            std::string::npos)
      << log.str();
  for (const std::string& config :
       {read_file(dir / "from/config.yaml"), read_checkpoint_meta(dir / "from/checkpoints/latest.pt").config_yaml})
    EXPECT_EQ(config_from_yaml(config, "recorded").data.tokenizer.type, "char");
}

// Evals drawing many times the validation split's tokens (they overlap, and take their time) are said before the
// first one, with a count of batches that reads the split a few times.
TEST(Trainer, EvalsFarBeyondTheValidationSplitAreSaid) {
  TempDir dir;
  TrainRequest r = tiny_run(dir, "evals", 1);
  r.overrides.push_back("train.eval_batches=400");  // 400 × 16 windows of 16 tokens: 18× the 5,638 validation tokens
  CapturedLog log;
  train(r);
  EXPECT_NE(log.str().find("--set: train.eval_batches = 400: each eval draws 6,400 windows of 16 tokens, 18× the val "
                           "split's 5,638 tokens"),
            std::string::npos)
      << log.str();
  EXPECT_NE(log.str().find("a few times the split's size is --set train.eval_batches="), std::string::npos);
  TrainRequest few = tiny_run(dir, "few", 1);  // 4 batches: a fifth of the split, as the tests' runs read it
  CapturedLog quiet;
  train(few);
  EXPECT_EQ(quiet.str().find("each eval draws"), std::string::npos) << quiet.str();
}

// Every file of a run folder, by path, with its bytes (its lock file aside: a trainer takes and leaves it).
std::map<std::string, std::string> folder_files(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().string() != RunFolder(dir).lock())
      files[e.path().string()] = read_file(e.path().string());
  return files;
}

// A resume refused for a damaged log or a changed corpus has changed nothing: its config.yaml keeps the run's
// config (not the --set values), its logs keep the steps past the checkpoint's it would have written again.
TEST(Trainer, ARefusedResumeLeavesItsFolderAsItWas) {
  TempDir dir;
  TrainRequest first = tiny_run(dir, "kept", 10);
  first.overrides.push_back("snapshot.every=2");
  first.overrides.push_back("train.checkpoint_every=4");
  train(first);
  const std::string rdir = dir / "kept";
  const auto expect_refused = [&](const std::string& what, const std::string& message) {
    const auto before = folder_files(rdir);
    TrainRequest r;
    r.resume_dir = rdir;
    r.overrides = {"train.max_steps=12"};
    try {
      train(r);
      ADD_FAILURE() << what << ": the resume went on";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << what << ": " << e.what();
    }
    EXPECT_EQ(folder_files(rdir), before) << what << ": the refused resume changed the folder";
  };
  ASSERT_NE(read_file(RunFolder(rdir).metrics()).find("\"step\":10"), std::string::npos);
  // a damaged line in the middle of the snapshot index, read after the metrics (which a resume cuts back first)
  const std::string index = read_file(RunFolder(rdir).snapshot_index());
  const size_t second = index.find('\n') + 1;
  test::write_text(RunFolder(rdir).snapshot_index(), index.substr(0, second) + "{garbage\n" + index.substr(second));
  expect_refused("a damaged index line", "index.jsonl");
  // an index emptied, or lost, while the tables are there (one a step, 0 to 10): the resume would write over it with
  // its own steps' lines alone
  test::write_text(RunFolder(rdir).snapshot_index(), "");
  expect_refused("an empty index",
                 "index.jsonl lists none of them, but snapshots/ holds 6 tables up to the checkpoint's step 10 "
                 "(wpe_step000000.npy and 5 more)");
  fs::remove(RunFolder(rdir).snapshot_index());
  expect_refused("no index", "index.jsonl is missing, but snapshots/ holds 6 tables up to the checkpoint's step 10");
  test::write_text(RunFolder(rdir).snapshot_index(), index);
  test::write_text(dir / "corpus.txt", test::generated_corpus(2000, /*seed=*/42));
  expect_refused("a changed corpus", "the corpus changed since the checkpoint was written");
  test::write_text(dir / "corpus.txt", test::generated_corpus(2000));
  // config.yaml edited by hand: a resume takes its config from the checkpoint and would write the edit over; a
  // config.yaml that does not parse; one of another run's name (a checkpoint of another run copied in reads so)
  const std::string config = read_file(RunFolder(rdir).config());
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string edited = config;
    const size_t at = edited.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return edited.replace(at, from.size(), to);
  };
  test::write_text(RunFolder(rdir).config(), with("\n  lr: 0.003\n", "\n  lr: 0.5\n"));
  expect_refused("an edited config.yaml",
                 RunFolder(rdir).config() + " says otherwise than its checkpoint " +
                     RunFolder(rdir).latest_checkpoint() +
                     " (train.lr 0.5 in config.yaml, 0.003 in the checkpoint): a resume trains on with the "
                     "checkpoint's config and the --set values, and writes config.yaml anew");
  test::write_text(RunFolder(rdir).config(), config + "model: {n_layer: 2}\n");
  expect_refused(
      "a config.yaml that does not parse",
      " (a resume takes its config from " + RunFolder(rdir).latest_checkpoint() + " and writes config.yaml anew)");
  test::write_text(RunFolder(rdir).config(), with("\n  name: kept\n", "\n  name: other\n"));
  expect_refused("config.yaml of another name", "a checkpoint of another run than " + RunFolder(rdir).config() +
                                                    " records (run.name kept in the checkpoint, other in config.yaml)");
  test::write_text(RunFolder(rdir).config(), config);
  // a table the index lists, cut short since (the report and analysis would fail only after the resume trained on),
  // and a log line the report would refuse
  const std::string table = read_file(RunFolder(rdir).snapshot(4));
  test::write_text(RunFolder(rdir).snapshot(4), table.substr(0, 100));
  expect_refused("a listed table cut short", RunFolder(rdir).snapshot(4) + ": truncated");
  expect_refused("a listed table cut short",
                 "(the table of step 4 that " + RunFolder(rdir).snapshot_index() + " lists)");
  fs::remove(RunFolder(rdir).snapshot(4));
  expect_refused("a listed table lost", RunFolder(rdir).snapshot(4) + ": cannot be read: ");
  test::write_text(RunFolder(rdir).snapshot(4), table);
  const std::string log = read_file(RunFolder(rdir).metrics());
  test::write_text(RunFolder(rdir).metrics(), "{}\n" + log.substr(log.find('\n') + 1));
  expect_refused("a log line without its step", RunFolder(rdir).metrics() + ":1: no \"step\"");
  test::write_text(RunFolder(rdir).metrics(), log);
  // a checkpoint whose table holds a NaN (written whole: its records' checksums match) is refused as damage, not
  // trained on to a NaN loss blamed on the learning rate
  const std::string latest = RunFolder(rdir).latest_checkpoint();
  const CheckpointMeta meta = read_checkpoint_meta(latest);
  const Config stored = config_from_yaml(meta.config_yaml, "stored");
  GPT model(stored.model, Tokenizer::from_bytes(meta.tokenizer_model, "stored").vocab_size());
  auto optimizer = make_optimizer(model, stored.train);
  load_checkpoint(latest, model, optimizer.get());
  {
    torch::NoGradGuard no_grad;
    model->wpe->weight[3][1] = std::nanf("");
  }
  save_checkpoint(latest, model, optimizer.get(), meta);
  expect_refused("a NaN in the checkpoint", latest + ": wpe.weight holds 1 NaN or Inf value");
}

// A key of config.yaml edited by hand and given as --set too: the resume trains on with it, and config.yaml says so.
TEST(Trainer, AnEditOfConfigYamlGivenAsSetIsTakenByTheResume) {
  TempDir dir;
  train(tiny_run(dir, "edited", 4));
  const std::string path = RunFolder(dir / "edited").config();
  std::string config = read_file(path);
  const size_t at = config.find("\n  lr: 0.003\n");
  ASSERT_NE(at, std::string::npos) << config;
  test::write_text(path, config.replace(at + 7, 5, "0.002"));
  TrainRequest r;
  r.resume_dir = dir / "edited";
  r.overrides = {"train.max_steps=6", "train.lr=0.002"};
  EXPECT_EQ(train(r).steps, 6);
  EXPECT_EQ(load_config(path, {}).train.lr, 0.002);
  EXPECT_EQ(config_from_yaml(read_checkpoint_meta(RunFolder(dir / "edited").latest_checkpoint()).config_yaml, "stored")
                .train.lr,
            0.002);
}

// A corpus path that is gone says what to do: a run's stored one (the corpus moved since) takes its new place with
// --set on the resume; a link to nowhere, or a loop of links, is named as a link.
TEST(Trainer, ACorpusPathThatIsGoneSaysWhatToDo) {
  TempDir dir;
  const Config stored =
      config_from_yaml("data: {corpus: [" + dir / "moved.txt" + "]}\n", dir / "latest.pt (stored config)");
  EXPECT_EQ(error_of([&] { check_corpus_paths(stored); }),
            dir / "latest.pt (stored config): data.corpus: " + dir / "moved.txt" +
                ": corpus path not found | put the corpus back, or give its new place: poslab train --resume RUN_DIR "
                "--set data.corpus=NEW_PATH (the same text: a changed corpus is refused)");
  fs::create_symlink(dir / "b", dir / "a");
  fs::create_symlink(dir / "a", dir / "b");
  EXPECT_EQ(error_of([&] { check_corpus_paths(load_config("", {"data.corpus=" + dir / "a"})); }),
            "--set: data.corpus: " + dir / "a" + ": a symbolic link to " + dir / "b" +
                ", which is missing or a loop of links | point the link at the corpus, or data.corpus at the corpus "
                "itself");
}

// The config's warnings (here: warmup past the run's end) are said when a run is about to train, not again by a
// resume of a run that already finished.
TEST(Trainer, AResumeOfAFinishedRunRepeatsNoConfigWarning) {
  TempDir dir;
  TrainRequest first = tiny_run(dir, "warned", 4);  // train.warmup_steps 5 is not below 4
  {
    CapturedLog log;
    train(first);
    EXPECT_NE(log.str().find("never decays"), std::string::npos) << log.str();
  }
  TrainRequest resume;
  resume.resume_dir = dir / "warned";
  CapturedLog log;
  EXPECT_EQ(train(resume).steps, 4);
  EXPECT_EQ(log.str().find("never decays"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("the run already reached train.max_steps = 4"), std::string::npos) << log.str();
  // A --set on it (a report drawn, say) trains no step and writes no checkpoint: config.yaml stays the checkpoint's,
  // and the next resume, with a longer run, is not refused as a hand edit of it. It says the rate jumps.
  const std::string config = read_file(dir / "warned/config.yaml");
  resume.overrides = {"train.log_every=1"};
  train(resume);
  EXPECT_EQ(read_file(dir / "warned/config.yaml"), config);
  resume.overrides = {"run.report=true"};  // what such a resume is for: said as such, no warning
  {
    CapturedLog drawn;
    train(resume);
    EXPECT_NE(drawn.str().find("[info] the run already reached train.max_steps = 4: no step to train, its report is "
                               "drawn again"),
              std::string::npos)
        << drawn.str();
  }
  resume.overrides = {"train.max_steps=8"};
  EXPECT_EQ(train(resume).steps, 8);
  // Past its warmup, a longer run's cosine starts its decay again from higher up: said.
  TrainRequest decayed = tiny_run(dir, "decayed", 4);
  decayed.overrides.push_back("train.warmup_steps=1");
  train(decayed);
  TrainRequest longer;
  longer.resume_dir = dir / "decayed";
  longer.overrides = {"train.max_steps=8"};
  CapturedLog jump;
  train(longer);
  EXPECT_NE(jump.str().find("train.max_steps 4 -> 8 lays the schedule anew over the whole run, so the rate jumps up"),
            std::string::npos)
      << jump.str();
}

// A checkpoint that cannot be looked at (here a loop of links; a folder above it unreadable does the same to a user
// who is not root) is named so, never taken for a missing one: a run that wrote none would be started again.
TEST(Trainer, ACheckpointThatCannotBeLookedAtIsNotMissing) {
  TempDir dir;
  train(tiny_run(dir, "loop", 4));
  const std::string latest = RunFolder(dir / "loop").latest_checkpoint();
  fs::remove(latest);
  fs::create_symlink(latest, latest);  // a link to itself
  TrainRequest resume;
  resume.resume_dir = dir / "loop";
  const std::string e = test::error_of([&] { train(resume); });
  EXPECT_NE(e.find(latest + ": cannot be looked at ("), std::string::npos) << e;
  EXPECT_EQ(e.find("is missing"), std::string::npos) << e;
}

// Tables the index does not list are no lost index: a resume leaves those past its checkpoint, which a run of other
// steps never lists (stopped elsewhere, another snapshot.every), and a line may be taken out by hand to read the run
// without a damaged table. The resume goes on.
TEST(Trainer, AResumeGoesOnBesideTablesItsIndexDoesNotList) {
  TempDir dir;
  TrainRequest first = tiny_run(dir, "stray", 10);
  first.overrides.push_back("snapshot.every=2");
  first.stop_at = 6;
  train(first);
  const RunFolder run(dir / "stray");
  fs::copy_file(run.snapshot(4), dir / "stray/snapshots/wpe_step000003.npy");  // a table of a step nobody listed
  const std::string index = read_file(run.snapshot_index());
  test::write_text(run.snapshot_index(), index.substr(index.find('\n') + 1));  // step 0's line taken out
  TrainRequest resume;
  resume.resume_dir = dir / "stray";
  EXPECT_EQ(train(resume).steps, 10);
}

// train.dtype auto is resolved before anything is written: config.yaml and the checkpoint say what ran, so a
// resumed run keeps its dtype on any machine.
TEST(Trainer, AutoDtypeIsStoredAsTheDtypeThatRan) {
  TempDir dir;
  TrainRequest r = tiny_run(dir, "auto", 2);
  r.overrides.push_back("train.dtype=auto");
  train(r);
  const std::string ran = resolve_dtype("auto", "cpu");
  EXPECT_EQ(load_config(dir / "auto/config.yaml").train.dtype, ran);
  const Config stored =
      config_from_yaml(read_checkpoint_meta(dir / "auto/checkpoints/latest.pt").config_yaml, "stored");
  EXPECT_EQ(stored.train.dtype, ran);
}

}  // namespace
}  // namespace poslab
