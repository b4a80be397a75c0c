// The run folder's layout and the readers of its files: good files read back what was written; a damaged file is
// an error that names the file, the line (for line-based files) or the key, and what to do.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "formats/npy.h"
#include "run/json_records.h"
#include "run/run_files.h"
#include "test_util.h"
#include "util/error.h"
#include "util/fs.h"

namespace poslab {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::TempDir;
using test::write_text;

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

TEST(RunFolder, PathsOfARun) {
  const RunFolder run("runs/default");
  EXPECT_EQ(run.config(), "runs/default/config.yaml");
  EXPECT_EQ(run.metrics(), "runs/default/metrics.jsonl");
  EXPECT_EQ(run.latest_checkpoint(), "runs/default/checkpoints/latest.pt");
  EXPECT_EQ(run.best_checkpoint(), "runs/default/checkpoints/best.pt");
  EXPECT_EQ(run.snapshot_index(), "runs/default/snapshots/index.jsonl");
  EXPECT_EQ(run.snapshot(500), "runs/default/snapshots/wpe_step000500.npy");
  EXPECT_EQ(snapshot_analysis_path(run.snapshot(500)), "runs/default/snapshots/wpe_step000500.json");
  EXPECT_EQ(run.position_loss(), "runs/default/eval/per_position_loss_val.csv");
  EXPECT_EQ(run.position_loss("train"), "runs/default/eval/per_position_loss_train.csv");
  EXPECT_EQ(run.extension_checkpoint(256, "linear"), "runs/default/extend/256-linear/checkpoint.pt");
  EXPECT_EQ(extension_info_path(run.extension_checkpoint(256, "linear")),
            "runs/default/extend/256-linear/checkpoint.extension.json");
  EXPECT_EQ(extension_table_path(run.extension_checkpoint(256, "linear")),
            "runs/default/extend/256-linear/checkpoint.wpe.npy");
  EXPECT_TRUE(is_extension_info("a/b/checkpoint.extension.json"));
  EXPECT_FALSE(is_extension_info(".extension.json"));
  EXPECT_FALSE(is_extension_info("checkpoint.json"));
  EXPECT_EQ(run.verdict_json(), "runs/default/analysis/verdict.json");
  EXPECT_EQ(run.report_dir(), "runs/default/report");
  EXPECT_EQ(RunFolder("runs/default/").name(), "default");
  EXPECT_EQ(RunFolder("runs/x/../default").name(), "default");
  // What pages show: no "snapshots/.." or trailing slash.
  EXPECT_EQ(RunFolder("/r/default/snapshots/..").path(), "/r/default");
  EXPECT_EQ(RunFolder("/r/default/").path(), "/r/default");
  EXPECT_EQ(RunFolder("runs/./default").path(), (fs::current_path() / "runs/default").string());
}

TEST(RunFolder, TheFolderOfACheckpoint) {
  EXPECT_EQ(RunFolder::of_checkpoint("/r/default/checkpoints/best.pt").dir(), "/r/default");
  EXPECT_EQ(RunFolder::of_checkpoint("/r/default/extend/256-copy/checkpoint.pt").dir(), "/r/default/extend/256-copy");
  EXPECT_EQ(RunFolder::of_checkpoint("x.pt").dir(), fs::current_path().string());
}

TEST(RunFolder, RunDirIsOutDirSlashName) {
  const Config c = load_config("", {"run.out_dir=/tmp/x", "run.name=abc"});
  EXPECT_EQ(run_dir(c), "/tmp/x/abc");
}

TEST(RunFolder, SweepLayoutAndVariantOfARun) {
  EXPECT_EQ(sweep_run_dir("runs/sw", "decay-off", 3), "runs/sw/decay-off/seed-3");
  EXPECT_EQ(sweep_index_path("runs/sw"), "runs/sw/sweep.json");
  EXPECT_EQ(variant_of_run_dir("runs/sw/decay-off/seed-3"), "decay-off");
  EXPECT_EQ(variant_of_run_dir("runs/sw/decay-off/seed-3/"), "decay-off");
  EXPECT_EQ(variant_of_run_dir("runs/default"), "default");
}

// A log that is not there reads as absent; one that cannot be looked at (a loop of links here) is an error naming it.
TEST(RunFiles, AFileThatCannotBeLookedAtIsNotAbsent) {
  TempDir dir;
  EXPECT_FALSE(is_file(dir / "nothing.jsonl"));
  EXPECT_FALSE(is_file(dir / "nothing/below.jsonl"));
  write_text(dir / "a.jsonl", "{}\n");
  EXPECT_TRUE(is_file(dir / "a.jsonl"));
  std::filesystem::create_symlink(dir / "loop.jsonl", dir / "loop.jsonl");
  EXPECT_NE(error_of([&] { is_file(dir / "loop.jsonl"); }).find(dir / "loop.jsonl" + ": cannot be looked at ("),
            std::string::npos);
}

TEST(RunFiles, MetricsReadBackWithEvalsAndNullLosses) {
  TempDir dir;
  const std::string path = dir / "metrics.jsonl";
  write_text(path,
             "{\"step\": 0, \"lr\": 0.001, \"train_loss\": 4.5, \"val_loss\": 4.6}\n"
             "{\"step\": 10, \"loss\": 4.1, \"tokens_per_s\": 1000}\n"
             "\n"
             "{\"step\": 20, \"train_loss\": 3.9, \"val_loss\": null}\n"
             "{\"step\": 30, \"loss\": 3.");  // cut short by a crash
  const auto records = read_metrics(path);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[1].step, 10);
  EXPECT_DOUBLE_EQ(records[1].loss, 4.1);
  EXPECT_FALSE(records[1].eval);
  EXPECT_TRUE(std::isnan(records[1].val_loss));
  const auto evals = val_evals(records);
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_DOUBLE_EQ(evals[0].val_loss, 4.6);
  EXPECT_EQ(evals[1].step, 20);
  EXPECT_TRUE(std::isnan(evals[1].val_loss));
  EXPECT_DOUBLE_EQ(evals[1].train_loss, 3.9);
}

TEST(RunFiles, DamagedMetricsNameTheFileAndLine) {
  TempDir dir;
  const std::string path = dir / "metrics.jsonl";
  write_text(path, "{\"step\": 0}\n{not json\n{\"step\": 2}\n");
  std::string msg = error_of([&] { read_metrics(path); });
  EXPECT_HAS(msg, path + ":2: not a metrics record (not JSON)");
  EXPECT_HAS(msg, "mend or delete that line");
  write_text(path, "{\"step\": 0}\n\n{\"step\": \"x\"}\n");
  msg = error_of([&] { read_metrics(path); });
  EXPECT_HAS(msg, path + ":3: \"step\" is \"x\", not an integer");
  write_text(path, "{\"lr\": 0.1}\n");
  EXPECT_HAS(error_of([&] { read_metrics(path); }), path + ":1: no \"step\"");
  write_text(path, "{\"step\": 1, \"val_loss\": \"low\"}\n");
  EXPECT_HAS(error_of([&] { read_metrics(path); }), path + ":1: \"val_loss\" is \"low\", not a number");
  write_text(path, "[1, 2]\n{\"step\": 1}\n");
  EXPECT_HAS(error_of([&] { read_metrics(path); }), path + ":1: not a metrics record (not a JSON object)");
  EXPECT_HAS(error_of([&] { read_metrics(dir / "none.jsonl"); }), dir / "none.jsonl");
}

TEST(RunFiles, SnapshotIndexRoundTripsInStepOrder) {
  TempDir dir;
  const RunFolder run(dir.str());
  make_dirs(run.snapshots());
  append_snapshot_record(run, {400, snapshot_file_name(400), "", 3.5, NAN});
  append_snapshot_record(run, {0, snapshot_file_name(0), "", 4.8, 4.9});
  const auto index = read_snapshot_index(run);
  ASSERT_EQ(index.size(), 2u);
  EXPECT_EQ(index[0].step, 0);
  EXPECT_EQ(index[0].path, run.snapshot(0));
  EXPECT_DOUBLE_EQ(index[0].val_loss, 4.9);
  EXPECT_EQ(index[1].file, "wpe_step000400.npy");
  EXPECT_TRUE(std::isnan(index[1].val_loss));
  const std::string text = read_file(run.snapshot_index());
  EXPECT_EQ(text.substr(0, text.find('\n')).find("val_loss"), std::string::npos) << text;  // NaN is left out, not null
}

TEST(RunFiles, ASnapshotsNameGivesItsStep) {
  for (int64_t step : {0, 7, 500, 123456, 1234567}) EXPECT_EQ(snapshot_step_of(snapshot_file_name(step)), step);
  for (const char* other : {"a.npy", "wpe_step.npy", "wpe_step12x.npy", "wpe_step000100.json", "wpe_step-1.npy",
                            "wpe_step0000000000000000001.npy"})  // the last: past 18 digits
    EXPECT_FALSE(snapshot_step_of(other).has_value()) << other;
}

TEST(RunFiles, DamagedOrMissingSnapshotIndexIsNamed) {
  TempDir dir;
  const RunFolder run(dir.str());
  std::string msg = error_of([&] { read_snapshot_index(run); });
  EXPECT_HAS(msg, run.snapshot_index() + " is missing");
  EXPECT_HAS(msg, "model.position learned");
  write_text(run.snapshot_index(), "{\"step\": 0, \"file\": \"wpe_step000000.npy\"}\n{\"step\": 5}\n");
  EXPECT_HAS(error_of([&] { read_snapshot_index(run); }), run.snapshot_index() + ":2: no snapshot file name");
  write_text(run.snapshot_index(), "{\"step\": 0, \"file\": \"../../etc/passwd\"}\n");
  EXPECT_HAS(error_of([&] { read_snapshot_index(run); }), "is not a file name inside snapshots/");
  write_text(run.snapshot_index(),
             "{\"step\": 0, \"file\": \"a.npy\"}\n{\"step\": 1, \"fi\n{\"step\": 2, \"file\": \"b.npy\"}\n");
  EXPECT_HAS(error_of([&] { read_snapshot_index(run); }), run.snapshot_index() + ":2: not a snapshot record");
  write_text(run.snapshot_index(),
             "{\"step\": 0, \"file\": \"a.npy\"}\n{\"step\": 10, \"file\": \"b.npy\"}\n"
             "{\"step\": 10, \"file\": \"b.npy\"}\n");
  msg = error_of([&] { read_snapshot_index(run); });
  EXPECT_HAS(msg, run.snapshot_index() + ":3: step 10 again (first on line 2)");
  EXPECT_HAS(msg, "delete one of the two lines");
  // A line whose file is another step's table (mended by hand) would show that table as this step's.
  write_text(run.snapshot_index(),
             "{\"step\": 0, \"file\": \"wpe_step000000.npy\"}\n{\"step\": 100, \"file\": \"wpe_step000200.npy\"}\n");
  msg = error_of([&] { read_snapshot_index(run); });
  EXPECT_HAS(msg, run.snapshot_index() + ":2: step 100 names wpe_step000200.npy, the table of step 200");
  EXPECT_HAS(msg, "the trainer writes step 100's table to wpe_step000100.npy");
  write_text(run.snapshot_index(), "{\"step\": 1000000, \"file\": \"wpe_step1000000.npy\"}\n");
  EXPECT_EQ(read_snapshot_index(run).at(0).file, "wpe_step1000000.npy");  // past six digits, the name grows
}

TEST(RunFiles, TruncateLogsDropsLaterStepsAndCutLines) {
  TempDir dir;
  const RunFolder run(dir.str());
  write_text(run.metrics(), "{\"step\": 0}\n{\"step\": 100}\n{\"step\": 200}\n{\"step\": 2");
  write_text(run.snapshot_index(), "{\"step\": 0, \"file\": \"a.npy\"}\n{\"step\": 200, \"file\": \"b.npy\"}\n");
  const std::vector<float> table(6, 0.5f);
  write_text(dir / "snapshots/a.npy", npy_bytes(table.data(), 2, 3));  // listed up to step 100: whole (b.npy is past)
  std::string log;                                                     // the repaired last line is said
  {
    const test::CapturedLog captured;
    truncate_logs_after(run, 100);
    log = captured.str();
  }
  EXPECT_HAS(log, run.metrics() + ": its last line was cut short (10 bytes, a crash while it was written): left out");
  EXPECT_EQ(log.find(run.snapshot_index()), std::string::npos) << log;
  // Step 100's record goes (the resumed run writes it again after step 100's update); its snapshot stays.
  EXPECT_EQ(read_file(run.metrics()), "{\"step\":0}\n");
  EXPECT_EQ(read_snapshot_index(run).size(), 1u);
  truncate_logs_after(RunFolder(dir / "nothing-here"), 5);  // missing files are fine

  // A damaged line before the last is named, and the file is left as it was.
  write_text(run.metrics(), "{\"step\": 0}\n{\"step\": 5, garbage\n{\"step\": 10}\n");
  const std::string msg = error_of([&] { truncate_logs_after(run, 10); });
  EXPECT_HAS(msg, run.metrics() + ":2: not a metrics record");
  EXPECT_EQ(read_file(run.metrics()), "{\"step\": 0}\n{\"step\": 5, garbage\n{\"step\": 10}\n");
}

// A log or folder of a run of the wrong kind is said before any log is cut, not when the resumed run first writes
// there (its TensorBoard file cut back by then).
TEST(RunFiles, ALogOrFolderOfTheWrongKindIsSaidBeforeAnythingIsCut) {
  TempDir dir;
  const RunFolder run(dir.str());
  write_text(run.metrics(), "{\"step\": 0}\n{\"step\": 100}\n");
  std::filesystem::create_directories(run.snapshot_index());
  EXPECT_EQ(error_of([&] { truncate_logs_after(run, 0); }),
            run.snapshot_index() +
                ": is a folder (or another thing that is no file) where the run's log goes | move it away; nothing "
                "was changed");
  std::filesystem::remove(run.snapshot_index());
  std::filesystem::remove(run.snapshots());
  write_text(run.snapshots(), "a file");
  EXPECT_EQ(error_of([&] { truncate_logs_after(run, 0); }),
            run.snapshots() + ": is a file where the run's folder goes | move it away; nothing was changed");
  EXPECT_EQ(read_file(run.metrics()), "{\"step\": 0}\n{\"step\": 100}\n");
}

// A last line without its newline was cut short by a crash (a line is appended with it in one write): left out. A
// last line with it, whole but no record, is damage like any other line.
TEST(RunFiles, ALastLineIsLeftOutOnlyWhenItWasCutShort) {
  TempDir dir;
  write_text(dir / "metrics.jsonl", "{\"step\": 0}\n{\"step\": 5, \"lo");
  EXPECT_EQ(read_metrics(dir / "metrics.jsonl").size(), 1u);
  write_text(dir / "metrics.jsonl", "{\"step\": 0}\ngarbage\n");
  EXPECT_NE(error_of([&] {
              read_metrics(dir / "metrics.jsonl");
            }).find(dir / "metrics.jsonl" + ":2: not a metrics record (not JSON)"),
            std::string::npos);
}

// A run whose index is lost while its tables are there is told to put the index back, not to pass another run.
TEST(RunFiles, ALostIndexBesideItsTablesSaysToPutItBack) {
  TempDir dir;
  const RunFolder run(dir.str());
  EXPECT_NE(error_of([&] { read_snapshot_index(run); }).find(": no snapshots ("), std::string::npos);
  write_text(run.config(), "run: {name: x}\n");  // a run stopped before its first snapshot: its resume trains it on
  EXPECT_NE(error_of([&] {
              read_snapshot_index(run);
            }).find("| a run stopped before its first snapshot: poslab train --resume " + dir.str() + " trains it on"),
            std::string::npos);
  const std::vector<float> table(6, 0.5f);
  for (int64_t step : {0, 5}) write_text(run.snapshot(step), npy_bytes(table.data(), 2, 3));
  EXPECT_EQ(error_of([&] { read_snapshot_index(run); }),
            dir.str() + ": " + run.snapshot_index() +
                " is missing, but snapshots/ holds 2 tables | put the run's index.jsonl back (a line a snapshot: "
                "{\"step\": N, \"file\": \"wpe_stepNNNNNN.npy\"})");
}

TEST(RunFiles, PositionLossRoundTripsAndAbsentIsEmpty) {
  TempDir dir;
  const std::string path = dir / "eval.csv";
  write_file_atomic(path, position_loss_csv({4.5, 3.25, 3.0}));
  EXPECT_EQ(read_file(path), "position,loss\n0,4.500000\n1,3.250000\n2,3.000000\n");
  EXPECT_EQ(read_position_loss(path), (std::vector<double>{4.5, 3.25, 3.0}));
  EXPECT_TRUE(read_position_loss(dir / "absent.csv").empty());
}

TEST(RunFiles, DamagedPositionLossNamesTheLine) {
  TempDir dir;
  const std::string path = dir / "eval.csv";
  write_text(path, "pos;loss\n0;1\n");
  std::string msg = error_of([&] { read_position_loss(path); });
  EXPECT_HAS(msg, path + ":1: the header is not position,loss");
  EXPECT_HAS(msg, "poslab eval");
  write_text(path, "position,loss\n0,4.5\n1,abc\n");
  EXPECT_HAS(error_of([&] { read_position_loss(path); }), path + ":3: loss \"abc\" is not a number");
  write_text(path, "position,loss\n0,4.5\n2,4.0\n");
  EXPECT_HAS(error_of([&] { read_position_loss(path); }), path + ":3: position 2 where 1 was expected");
  write_text(path, "position,loss\n0 4.5\n");
  EXPECT_HAS(error_of([&] { read_position_loss(path); }), path + ":2: \"0 4.5\" is not POSITION,LOSS");
  write_text(path, "position,loss\n0,4.5x\n");
  EXPECT_HAS(error_of([&] { read_position_loss(path); }), path + ":2: loss \"4.5x\" is not a number");
}

TEST(RunFiles, SnapshotUsageAbsentIsNoneAndDamageIsNamed) {
  TempDir dir;
  const RunFolder run(dir.str());
  EXPECT_FALSE(read_snapshot_usage(run, 100).has_value());
  const std::string path = run.snapshot_usage(100);
  EXPECT_EQ(path, dir / "snapshots/model_step000100.json");
  const nlohmann::json head = {
      {"kind", "local"}, {"offset_profile", {1, 0}}, {"mass_offset0", 0.9},     {"mass_offset1", 0.1}, {"offset50", 0},
      {"offset90", 1},   {"uniform_offset50", 1},    {"decay_length", nullptr}, {"mass_first", 0.5}};
  const nlohmann::json geometry = {{"k", 2},
                                   {"principal_angles_degrees", {80.0, 85.0}},
                                   {"mean_token_variance_ratio", 0.1},
                                   {"mean_token_spectrum_quantile", 0.7},
                                   {"max_abs_cosine", nullptr}};
  const nlohmann::json good = {{"step", 100},
                               {"attention_kernels", {{"heads", {head}}}},
                               {"position_token", geometry},
                               {"data_attention", {{"heads", {head}}}}};
  write_text(path, good.dump());
  ASSERT_TRUE(read_snapshot_usage(run, 100).has_value());
  EXPECT_EQ((*read_snapshot_usage(run, 100))["attention_kernels"]["heads"][0]["kind"], "local");
  auto damaged = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = good;
    edit(j);
    write_text(path, j.dump());
    return error_of([&] { read_snapshot_usage(run, 100); });
  };
  write_text(path, "{\"step\": 100,");
  std::string msg = error_of([&] { read_snapshot_usage(run, 100); });
  EXPECT_HAS(msg, path + ": not JSON");
  EXPECT_HAS(msg, "delete it");
  write_text(path, "[1, 2]");
  EXPECT_HAS(error_of([&] { read_snapshot_usage(run, 100); }), path + ": not a JSON object");
  EXPECT_HAS(damaged([](auto& j) { j["attention_kernels"] = nlohmann::json::object(); }),
             path + ": no attention_kernels.heads list");
  EXPECT_HAS(damaged([](auto& j) { j["attention_kernels"]["heads"][0].erase("offset_profile"); }),
             "a head of attention_kernels without its kind and offset_profile");
  EXPECT_HAS(damaged([](auto& j) {
               j["attention_kernels"]["heads"][0]["offset_profile"] = {1, "x"};
             }),
             "without its kind and offset_profile (a list of numbers)");
  EXPECT_HAS(damaged([](auto& j) { j["data_attention"]["heads"][0]["offset50"] = "7"; }),
             "a head of data_attention has no offset50 (a number or null)");
  EXPECT_HAS(damaged([](auto& j) { j["data_attention"]["heads"][0].erase("mass_offset1"); }),
             "a head of data_attention has no mass_offset1");
  EXPECT_HAS(damaged([](auto& j) { j["attention_kernels"]["heads"][0]["mass_first"] = true; }),
             "a mass_first that is not a number");
  EXPECT_HAS(damaged([](auto& j) { j.erase("position_token"); }),
             path + ": no position_token object with k and principal_angles_degrees");
  EXPECT_HAS(damaged([](auto& j) { j["position_token"].erase("max_abs_cosine"); }),
             "position_token has no max_abs_cosine");
  nlohmann::json no_text = good;  // a run without text windows
  no_text.erase("data_attention");
  write_text(path, no_text.dump());
  EXPECT_TRUE(read_snapshot_usage(run, 100).has_value());
}

TEST(RunFiles, KernelRecordRoundTripsAndDamageIsNamed) {
  TempDir dir;
  const RunFolder run(dir.str());
  EXPECT_FALSE(read_kernel_record(run).has_value());
  write_kernel_record(run, "bf16_products=onednn,attention=fused,pointwise=fused", "measured in 1.0 s");
  EXPECT_EQ(run.kernel_paths(), dir / "kernel_paths.json");
  EXPECT_EQ(read_kernel_record(run), "bf16_products=onednn,attention=fused,pointwise=fused");
  write_text(run.kernel_paths(), "{\"paths\": 3}");
  const std::string msg = error_of([&] { read_kernel_record(run); });
  EXPECT_HAS(msg, run.kernel_paths() + ": no \"paths\" string");
  EXPECT_HAS(msg, "delete it");
  write_text(run.kernel_paths(), "{\"paths\"");
  EXPECT_HAS(error_of([&] { read_kernel_record(run); }), run.kernel_paths() + ": not JSON");
}

TEST(RunFiles, ShiftLossRoundTripsAndDamageIsNamed) {
  TempDir dir;
  const std::string path = dir / "shift.csv";
  write_file_atomic(path, shift_loss_csv({0, 8}, {{4.0, 3.0}, {4.5, 3.5}}));
  const ShiftCurve c = read_shift_loss(path);
  EXPECT_EQ(c.shifts, (std::vector<int64_t>{0, 8}));
  EXPECT_EQ(c.by_position[1], (std::vector<double>{4.5, 3.5}));
  EXPECT_EQ(c.loss, (std::vector<double>{3.5, 4.0}));
  EXPECT_TRUE(read_shift_loss(dir / "absent.csv").shifts.empty());
  write_text(path, "shift,position,loss\n0,0,4.0\n0,2,3.0\n");
  std::string msg = error_of([&] { read_shift_loss(path); });
  EXPECT_HAS(msg, path + ":3: shift 0 position 2 out of order");
  EXPECT_HAS(msg, "poslab eval --shift");
  write_text(path, "shift,position,loss\n0,0,abc\n");
  EXPECT_HAS(error_of([&] { read_shift_loss(path); }), path + ":2: \"0,0,abc\" is not SHIFT,POSITION,LOSS");
  write_text(path, "position,loss\n");
  EXPECT_HAS(error_of([&] { read_shift_loss(path); }), path + ":1: the header is not shift,position,loss");
}

TEST(RunFiles, ExtensionInfoRoundTripsAndDamageIsNamed) {
  TempDir dir;
  const RunFolder run(dir.str());
  ExtensionInfo e;
  e.source = "/r/checkpoints/latest.pt";
  e.source_step = 1500;
  e.from = 128;
  e.to = 256;
  e.method = "cubic";
  e.seed = 7;
  e.checkpoint = run.extension_checkpoint(256, "cubic");
  e.table = extension_table_path(e.checkpoint);
  e.run_name = "default-ext256-cubic";
  e.table_before = {{"effective_rank", 4.5}};
  const std::string path = extension_info_path(e.checkpoint);
  write_text(path, to_json(e).dump(2));
  EXPECT_EQ(extension_infos_of(run), std::vector<std::string>{path});
  const ExtensionInfo back = read_extension_info(path);
  EXPECT_EQ(to_json(back), to_json(e));

  write_text(path, "{\"from\": 128,");
  std::string msg = error_of([&] { read_extension_info(path); });
  EXPECT_HAS(msg, path + ": not JSON");
  EXPECT_HAS(msg, "poslab extend --force");
  write_text(path, "{\"from\": 128, \"method\": \"copy\", \"checkpoint\": \"x.pt\"}");
  EXPECT_HAS(error_of([&] { read_extension_info(path); }), path + ": no \"to\"");
  write_text(path, "{\"from\": 128, \"to\": \"256\", \"method\": \"copy\", \"checkpoint\": \"x.pt\"}");
  EXPECT_HAS(error_of([&] { read_extension_info(path); }), path + ": \"to\" is \"256\"");
  write_text(path, "{\"from\": 128, \"to\": 64, \"method\": \"copy\", \"checkpoint\": \"x.pt\"}");
  EXPECT_HAS(error_of([&] { read_extension_info(path); }), "from 128 to 64");
  // a number where an integer belongs: named, never converted (1e300 overflowed: a fuzzer's find)
  for (const char* step : {"1e300", "2.5"}) {
    write_text(path, std::string("{\"from\": 128, \"to\": 256, \"method\": \"copy\", \"checkpoint\": \"x.pt\", "
                                 "\"source_step\": ") +
                         step + "}");
    EXPECT_HAS(error_of([&] { read_extension_info(path); }), path + ": \"source_step\" is ");
  }
  EXPECT_TRUE(extension_infos_of(RunFolder(dir / "no-run")).empty());
}

TEST(RunFiles, SweepIndexRoundTripsAndDamageIsNamed) {
  TempDir dir;
  SweepIndex s;
  s.name = "decay";
  s.file = "/x/decay.yaml";
  s.base = "configs/default.yaml";
  s.sweep_yaml = "name: decay\n";
  s.seeds = {1, 2};
  s.set = {"train.max_steps=10"};
  s.variants = {{"on", {{"train.weight_decay", "0.1"}}}, {"off", {{"train.weight_decay", "0"}}}};
  for (int64_t seed : s.seeds)
    for (const auto& v : s.variants) s.runs.push_back({v.name, seed, v.name + "/" + sweep_run_name(seed)});
  EXPECT_FALSE(is_sweep_dir(dir.str()));
  write_sweep_index(dir.str(), s);
  EXPECT_TRUE(is_sweep_dir(dir.str()));
  const SweepIndex back = read_sweep_index(dir.str());
  EXPECT_EQ(back.name, "decay");
  EXPECT_EQ(back.seeds, s.seeds);
  EXPECT_EQ(back.set, s.set);
  ASSERT_EQ(back.variants.size(), 2u);
  EXPECT_EQ(back.variants[1].set, s.variants[1].set);
  ASSERT_EQ(back.runs.size(), 4u);
  EXPECT_EQ(back.runs[3].run_dir, "off/seed-2");
  EXPECT_EQ(back.runs[3].seed, 2);

  const std::string path = sweep_index_path(dir.str());
  write_text(path, "{\"name\": \"decay\", \"runs\": [{\"variant\": \"on\", \"seed\": 1}]}");
  std::string msg = error_of([&] { read_sweep_index(dir.str()); });
  EXPECT_HAS(msg, path + " (runs): no \"run_dir\"");
  EXPECT_HAS(msg, "run the sweep again");
  write_text(path, "{\"name\": \"decay\", \"runs\": [{\"variant\": \"on\", \"seed\": 1, \"run_dir\": \"../../etc\"}]}");
  EXPECT_HAS(error_of([&] { read_sweep_index(dir.str()); }), "is not a folder inside the sweep's folder");
  write_text(path, "{\"name\": \"decay\"}");
  EXPECT_HAS(error_of([&] { read_sweep_index(dir.str()); }), path + ": no list of \"runs\"");
  write_text(path, "nonsense");
  EXPECT_HAS(error_of([&] { read_sweep_index(dir.str()); }), path + ": not JSON");
}

}  // namespace
}  // namespace poslab
