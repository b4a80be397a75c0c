// Data-parallel training end to end, through the poslab program: 2 processes (Gloo over loopback) against 1,
// resumes across world sizes, a killed worker, Ctrl-C, and a batch that does not divide.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "load/loaded_model.h"
#include "source_paths.h"
#include "test_util.h"

namespace poslab {
namespace {

using test::read_jsonl;
using test::TempDir;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// 2 processes and 1 sum gradients in a different order; AdamW's first steps (update ~ lr * sign(g)) carry those
// float differences into the weights. Measured max |Δ| after 6 steps: 1.7e-6 (a bias whose gradient is near 0);
// a missing sum or another batch moves weights by ~1e-3 (the learning rate). AdamW does not see the gradient's
// scale: the logged losses, weighted like the gradients, catch a wrong share.
constexpr double kSameRunTol = 2e-5;
constexpr double kSameLossTol = 1e-5;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// poslab with `args`, started in the background, stdout and stderr into `log`.
pid_t start_poslab(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> all = {poslab::test::poslab_binary()};
  all.insert(all.end(), args.begin(), args.end());
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    FILE* f = std::fopen(log.c_str(), "w");
    ::dup2(fileno(f), STDOUT_FILENO);
    ::dup2(fileno(f), STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// Waits for `pid` at most `limit`; returns its exit code (128 + signal when killed), or -1 after killing it.
int wait_exit(pid_t pid, std::chrono::seconds limit) {
  const auto end = Clock::now() + limit;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > end) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

int run_poslab(const std::vector<std::string>& args, const std::string& log) {
  return wait_exit(start_poslab(args, log), std::chrono::seconds(300));
}

// Blocks until `path` holds `text` (or `limit` passes): true when it does.
bool wait_for_text(const std::string& path, const std::string& text, std::chrono::seconds limit) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (read_file(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// The largest |Δ| between two checkpoints' weights, and the name of that parameter.
std::pair<double, std::string> max_weight_difference(const std::string& a, const std::string& b) {
  const LoadedModel ma = load_model(a), mb = load_model(b);
  const auto pa = ma.model->named_parameters(), pb = mb.model->named_parameters();
  double worst = 0;
  std::string where;
  for (const auto& item : pa) {
    const double d = (item.value() - pb[item.key()]).abs().max().item<double>();
    if (d >= worst) {
      worst = d;
      where = item.key();
    }
  }
  return {worst, where};
}

std::set<std::string> files_under(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.insert(fs::relative(e.path(), dir).string());
  return out;
}

class DistTrain : public ::testing::Test {
 protected:
  void SetUp() override {
    test::write_text(dir_ / "corpus.txt", test::generated_corpus(2000));
    test::write_text(dir_ / "tiny.yaml",
                     "run: {out_dir: " + dir_.str() +
                         ", threads: 1, report: false, device: cpu, dist_timeout_s: 10}\n"
                         "data: {corpus: " +
                         (dir_ / "corpus.txt") + ", cache_dir: " + (dir_ / "cache") +
                         ", tokenizer: {type: char}}\n"
                         "model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 16}\n"
                         "train: {batch_size: 8, max_steps: 6, eval_every: 3, eval_batches: 2, checkpoint_every: 3,\n"
                         "        log_every: 1, warmup_steps: 2, lr: 0.003}\n"
                         "snapshot: {every: 3}\n");
  }
  // poslab train tiny.yaml as run `name` with `extra` arguments; its exit code, its output in `name`.log.
  int train(const std::string& name, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"train", dir_ / "tiny.yaml", "--set", "run.name=" + name};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_poslab(args, log(name));
  }
  int resume(const std::string& name, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"train", "--resume", dir_ / name};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_poslab(args, log(name + "-resume"));
  }
  std::string log(const std::string& name) const { return dir_ / (name + ".log"); }
  std::string latest(const std::string& name) const { return dir_ / (name + "/checkpoints/latest.pt"); }

  TempDir dir_;
};

TEST_F(DistTrain, TwoProcessesTrainTheRunOneProcessTrains) {
  ASSERT_EQ(train("one"), 0) << read_file(log("one"));
  ASSERT_EQ(train("two", {"--nproc", "2"}), 0) << read_file(log("two"));
  const auto [diff, where] = max_weight_difference(latest("one"), latest("two"));
  EXPECT_LT(diff, kSameRunTol) << "max |Δ| " << diff << " in " << where;
  std::cout << "2 processes against 1 after 6 steps: max |Δ| of the weights " << diff << " (" << where << ")\n";
  EXPECT_EQ(load_model(latest("two")).meta.step, 6);
  const LoadedModel one = load_model(latest("one")), two = load_model(latest("two"));
  EXPECT_NEAR(one.meta.val_loss, two.meta.val_loss, 1e-4);  // the eval's shards add up to the whole estimate
  EXPECT_NEAR(one.meta.train_loss, two.meta.train_loss, 1e-4);
  const auto m1 = read_jsonl(dir_ / "one/metrics.jsonl"), m2 = read_jsonl(dir_ / "two/metrics.jsonl");
  ASSERT_EQ(m1.size(), m2.size());
  for (size_t i = 0; i < m1.size(); ++i)
    if (m1[i].contains("loss")) {  // the batch loss of every step, summed over the ranks' shares
      EXPECT_NEAR(m1[i]["loss"].get<double>(), m2[i]["loss"].get<double>(), kSameLossTol) << "step " << m1[i]["step"];
    }

  // Rank 0 alone wrote the run folder (the same files as one process's), and rank 1 logged nothing but trouble.
  EXPECT_EQ(files_under(dir_ / "one"), files_under(dir_ / "two"));
  const std::string out = read_file(log("two"));
  EXPECT_EQ(out.find("[rank 1]"), std::string::npos) << out;
  EXPECT_NE(out.find("distributed: 2 processes"), std::string::npos) << out;
  EXPECT_NE(out.find("all-reduce"), std::string::npos) << out;
}

TEST_F(DistTrain, ACheckpointOfTwoProcessesResumesOnOneAndTheReverse) {
  ASSERT_EQ(train("one"), 0) << read_file(log("one"));
  ASSERT_EQ(train("two-then-one", {"--nproc", "2", "--stop-at", "3"}), 0) << read_file(log("two-then-one"));
  ASSERT_EQ(resume("two-then-one"), 0) << read_file(log("two-then-one-resume"));
  ASSERT_EQ(train("one-then-two", {"--stop-at", "3"}), 0) << read_file(log("one-then-two"));
  ASSERT_EQ(resume("one-then-two", {"--nproc", "2"}), 0) << read_file(log("one-then-two-resume"));
  for (const std::string name : {"two-then-one", "one-then-two"}) {
    const auto [diff, where] = max_weight_difference(latest("one"), latest(name));
    EXPECT_LT(diff, kSameRunTol) << name << ": max |Δ| " << diff << " in " << where;
    std::cout << name << " against one process: max |Δ| of the weights " << diff << " (" << where << ")\n";
    EXPECT_EQ(load_model(latest(name)).meta.step, 6) << name;
  }
}

TEST_F(DistTrain, AKilledWorkerStopsTheLauncherWithinTheTimeoutNamingItsRankAndStep) {
  const pid_t launcher = start_poslab(
      {"train", dir_ / "tiny.yaml", "--set", "run.name=killed", "--set", "train.max_steps=100000", "--nproc", "2"},
      log("killed"));
  ASSERT_TRUE(wait_for_text(log("killed"), "step 3 |", std::chrono::seconds(120))) << read_file(log("killed"));
  std::smatch m;
  const std::string started = read_file(log("killed"));
  ASSERT_TRUE(std::regex_search(started, m, std::regex(R"(pids (\d+), (\d+))"))) << started;
  const pid_t rank1 = std::stoi(m[2]);
  const auto t0 = Clock::now();
  ASSERT_EQ(::kill(rank1, SIGKILL), 0);
  const int code = wait_exit(launcher, std::chrono::seconds(60));
  const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::string out = read_file(log("killed"));
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(code, -1) << "the launcher hung after a worker died:\n" << out;
  EXPECT_LT(waited, 10 + 5) << "run.dist_timeout_s is 10";
  EXPECT_TRUE(std::regex_search(out, std::regex("rank 1 \\(pid " + std::to_string(rank1) +
                                                "\\) was killed by signal 9 \\(Killed\\) at step \\d+")))
      << out;
  EXPECT_EQ(load_model(latest("killed")).meta.step % 3, 0);  // the last checkpoint is whole
}

// The launcher killed with SIGKILL: its ranks stop (SIGTERM from the kernel) and nothing of it stays in TMPDIR (its
// step file has no name once made).
TEST_F(DistTrain, AKilledLauncherLeavesNoFileInTmpdir) {
  const fs::path tmp = dir_ / "tmpdir";
  fs::create_directories(tmp);
  const char* before = std::getenv("TMPDIR");
  const std::string saved = before ? before : "";
  ::setenv("TMPDIR", tmp.c_str(), 1);
  const pid_t launcher = start_poslab(
      {"train", dir_ / "tiny.yaml", "--set", "run.name=orphans", "--set", "train.max_steps=100000", "--nproc", "2"},
      log("orphans"));
  before ? ::setenv("TMPDIR", saved.c_str(), 1) : ::unsetenv("TMPDIR");
  ASSERT_TRUE(wait_for_text(log("orphans"), "step 1 |", std::chrono::seconds(120))) << read_file(log("orphans"));
  std::smatch m;
  const std::string started = read_file(log("orphans"));
  ASSERT_TRUE(std::regex_search(started, m, std::regex(R"(pids (\d+), (\d+))"))) << started;
  ASSERT_EQ(::kill(launcher, SIGKILL), 0);
  EXPECT_EQ(wait_exit(launcher, std::chrono::seconds(10)), 128 + SIGKILL);
  for (const pid_t r : {static_cast<pid_t>(std::stoi(m[1])), static_cast<pid_t>(std::stoi(m[2]))})
    for (auto end = Clock::now() + std::chrono::seconds(60); alive(r) && Clock::now() < end;)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(files_under(tmp), std::set<std::string>{});
}

TEST_F(DistTrain, CtrlCOnTheLauncherStopsEveryRankAtOneStepWithOneCheckpoint) {
  const pid_t launcher = start_poslab(
      {"train", dir_ / "tiny.yaml", "--set", "run.name=stopped", "--set", "train.max_steps=100000", "--nproc", "2"},
      log("stopped"));
  ASSERT_TRUE(wait_for_text(log("stopped"), "step 3 |", std::chrono::seconds(120))) << read_file(log("stopped"));
  ASSERT_EQ(::kill(launcher, SIGINT), 0);
  const int code = wait_exit(launcher, std::chrono::seconds(60));
  const std::string out = read_file(log("stopped"));
  EXPECT_EQ(code, 128 + SIGINT) << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(interrupted at step (\d+))"))) << out;
  const int64_t step = std::stoll(m[1]);
  EXPECT_EQ(load_model(latest("stopped")).meta.step, step);  // rank 0's checkpoint is at the step every rank stopped
  EXPECT_EQ(out.find("error"), std::string::npos) << out;    // no rank failed or waited for another
  // ... and it goes on, here on one process.
  EXPECT_EQ(resume("stopped", {"--set", "train.max_steps=" + std::to_string(step + 2)}), 0)
      << read_file(log("stopped-resume"));
}

// The highest "step N |" line in a log, -1 before any.
int64_t last_logged_step(const std::string& log) {
  const std::string text = read_file(log);
  int64_t last = -1;
  static const std::regex line(R"(step (\d+) \|)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator(); ++it)
    last = std::max<int64_t>(last, std::stoll((*it)[1]));
  return last;
}

// Kill anywhere, resume, same answer: a --nproc 2 run SIGKILLed at random steps — the launcher, rank 0 or rank 1 —
// and resumed, by turns on 1 process and on 2, until it finishes, ends within kSameRunTol of the run one process
// trains without a stop, and its metrics list every step once.
TEST_F(DistTrain, KilledAtRandomStepsAndResumedOnOneAndTwoProcessesEndsWhereOneProcessEnds) {
  // 12 steps of a 16x batch: a few seconds, so that a kill lands at the step drawn.
  const std::string steps = "train.max_steps=12", batch = "train.batch_size=128";
  ASSERT_EQ(train("one", {"--set", steps, "--set", batch}), 0) << read_file(log("one"));
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::cout << "kill steps drawn with seed " << seed << "\n";
  int kills = 0, exit_code = -1;
  bool fresh = true;  // the next start trains the run from the start
  for (int attempt = 0; attempt < 10 && exit_code != 0; ++attempt) {
    const bool two = attempt % 2 == 0;  // the first start and every other resume on 2 processes
    const std::string name = "killed-" + std::to_string(attempt);
    std::vector<std::string> args = {"train", "--resume", dir_ / "killed"};
    if (fresh) args = {"train", dir_ / "tiny.yaml", "--set", "run.name=killed", "--set", steps, "--set", batch};
    fresh = false;
    if (two) args.insert(args.end(), {"--nproc", "2"});
    const pid_t pid = start_poslab(args, log(name));
    // a step with 3 after it: the kill, up to 150 ms after the step's log line, lands before the run's end
    const int64_t at = std::uniform_int_distribution<int64_t>(1, 9)(rng);
    const auto delay = std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 150)(rng));
    int status = 0;
    bool exited = false;
    const auto limit = Clock::now() + std::chrono::seconds(120);
    while (!(exited = ::waitpid(pid, &status, WNOHANG) == pid) && last_logged_step(log(name)) < at &&
           Clock::now() < limit)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (exited) {  // it finished (or failed) before the step drawn; before any kill, the run starts again
      exit_code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
      ASSERT_EQ(exit_code, 0) << read_file(log(name));
      if (kills > 0) break;
      exit_code = -1;
      fs::remove_all(dir_ / "killed");
      fresh = true;
      continue;
    }
    std::this_thread::sleep_for(delay);
    std::vector<pid_t> ranks = {pid};
    std::smatch m;
    const std::string started = read_file(log(name));
    if (two && std::regex_search(started, m, std::regex(R"(pids (\d+), (\d+))")))
      ranks = {static_cast<pid_t>(std::stoi(m[1])), static_cast<pid_t>(std::stoi(m[2]))};
    const int target = two ? std::uniform_int_distribution<int>(0, 2)(rng) : 0;  // 0: launcher (or the process)
    const pid_t victim = target == 0 ? pid : ranks.at(target - 1);
    ::kill(victim, SIGKILL);
    const int64_t killed_after = last_logged_step(log(name));
    const int code = wait_exit(pid, std::chrono::seconds(60));
    EXPECT_NE(code, -1) << "the launcher hung after a rank died:\n" << read_file(log(name));
    if (code == 0) {  // it finished a moment before the signal: no kill; before any, the run starts again
      if (kills > 0) {
        exit_code = 0;
        break;
      }
      fs::remove_all(dir_ / "killed");
      fresh = true;
      continue;
    }
    ++kills;
    std::cout << "start " << attempt << " on " << (two ? 2 : 1) << " process" << (two ? "es" : "") << ": killed "
              << (!two          ? "the process"
                  : target == 0 ? "the launcher"
                                : "rank " + std::to_string(target - 1))
              << " after step " << killed_after << "\n";
    for (const pid_t r : ranks)  // a killed launcher's ranks stop on their own (SIGTERM from the kernel)
      for (auto end = Clock::now() + std::chrono::seconds(60); alive(r) && Clock::now() < end;)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (exit_code != 0) {  // every start was killed: one more, left to finish
    ASSERT_EQ(resume("killed"), 0) << read_file(log("killed-resume"));
  }
  std::cout << kills << " kills, then finished\n";
  EXPECT_GT(kills, 0) << "no start was killed: the comparison below is of two uninterrupted runs";
  const auto [diff, where] = max_weight_difference(latest("one"), latest("killed"));
  EXPECT_LT(diff, kSameRunTol) << "max |Δ| " << diff << " in " << where;
  std::cout << "killed and resumed against one process: max |Δ| of the weights " << diff << " (" << where << ")\n";
  EXPECT_EQ(load_model(latest("killed")).meta.step, 12);
  std::vector<int64_t> logged;
  for (const auto& r : read_jsonl(dir_ / "killed/metrics.jsonl"))
    if (r.contains("loss")) logged.push_back(r["step"].get<int64_t>());
  std::vector<int64_t> every(12);
  std::iota(every.begin(), every.end(), 0);
  EXPECT_EQ(logged, every);
}

TEST_F(DistTrain, ABatchThatDoesNotDivideAmongTheProcessesIsAnError) {
  EXPECT_EQ(train("uneven", {"--nproc", "3"}), 2);
  const std::string out = read_file(log("uneven"));
  EXPECT_NE(out.find("error: " + dir_ / "tiny.yaml" + ": train.batch_size = 8 does not divide among 3 processes"),
            std::string::npos)
      << out;
  EXPECT_FALSE(fs::exists(dir_ / "uneven")) << "nothing is written before the workers start";
}

}  // namespace
}  // namespace poslab
