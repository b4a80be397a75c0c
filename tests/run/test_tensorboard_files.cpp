// A run's live TensorBoard files: the events a trainer appends read back; a resume's cut keeps exactly the steps
// truncate_logs_after keeps in metrics.jsonl and the snapshot index, and drops a record cut short; each start writes
// a new event file after the earlier ones; the projector's config lists the snapshots the index holds.
// TensorBoard's own readers read a run's folder in tests/export/test_export.sh (the pip leg).
#include <gtest/gtest.h>

#include <filesystem>

#include "formats/npy.h"
#include "formats/tfevents.h"
#include "run/run_files.h"
#include "run/tensorboard_files.h"
#include "source_paths.h"
#include "test_util.h"
#include "util/fs.h"

namespace poslab {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::write_text;

// (step, tag) of every scalar of a folder's event files, in the order TensorBoard reads them.
std::vector<std::pair<int64_t, std::string>> scalars_of(const RunFolder& run) {
  std::vector<std::pair<int64_t, std::string>> out;
  for (const std::string& path : event_files(run.tensorboard_dir())) {
    const std::string bytes = read_file(path);
    const TfEventFile f = read_tf_events(bytes);
    EXPECT_EQ(f.valid, bytes.size()) << path;
    EXPECT_TRUE(!f.events.empty() && f.events[0].file_version) << path << ": no file-version event first";
    for (const TfEvent& e : f.events)
      if (!e.file_version) out.emplace_back(e.step, e.tag);
  }
  return out;
}

TEST(TensorboardFiles, EventsReadBackAsWritten) {
  const std::string bytes = tf_record(tf_file_version_event(5.0)) +
                            scalar_events({{3, "loss/val", 2.5}, {7, "lr", NAN}, {9, "table/k90", 12}}, 6.0);
  const TfEventFile f = read_tf_events(bytes);
  ASSERT_EQ(f.events.size(), 3u);  // the NaN left out
  EXPECT_TRUE(f.events[0].file_version);
  EXPECT_EQ(f.events[0].wall_time, 5.0);
  EXPECT_EQ(f.events[1].step, 3);
  EXPECT_EQ(f.events[1].tag, "loss/val");
  EXPECT_EQ(f.events[1].value, 2.5f);
  EXPECT_EQ(f.events[1].wall_time, 6.0);
  EXPECT_EQ(f.events[2].tag, "table/k90");
  EXPECT_EQ(f.events[2].value, 12.0f);
  EXPECT_EQ(f.valid, bytes.size());
  EXPECT_EQ(f.events[2].end, bytes.size());
  // Cut anywhere inside the last record, or one byte of it changed: the records before it, whole.
  for (size_t cut = f.events[1].end; cut < bytes.size(); ++cut) {
    const TfEventFile g = read_tf_events(bytes.substr(0, cut));
    EXPECT_EQ(g.events.size(), 2u) << "cut at " << cut;
    EXPECT_EQ(g.valid, f.events[1].end) << "cut at " << cut;
  }
  std::string damaged = bytes;
  damaged[f.events[1].end + 14] ^= 1;
  EXPECT_EQ(read_tf_events(damaged).valid, f.events[1].end);
}

// A file TensorBoard's own writer made (PyTorch's SummaryWriter, tests/fixtures/README.md): read back, and cut for a
// resume at step 20 as poslab cuts its own.
TEST(TensorboardFiles, AFileSummaryWriterWroteReadsAndCuts) {
  const std::string bytes =
      read_file(test::source_dir() + "/tests/fixtures/tensorboard/events.out.tfevents.summarywriter");
  const TfEventFile f = read_tf_events(bytes);
  EXPECT_EQ(f.valid, bytes.size());
  ASSERT_EQ(f.events.size(), 12u);  // the file version, then 11 scalars
  EXPECT_TRUE(f.events[0].file_version);
  EXPECT_EQ(f.events[3].step, 10);
  EXPECT_EQ(f.events[3].tag, "loss/batch");
  EXPECT_EQ(f.events[3].value, 4.0f);
  EXPECT_EQ(f.events[11].tag, "loss/val");
  EXPECT_EQ(f.events[11].value, 4.5f);
  EXPECT_GT(f.events[11].wall_time, 1.7e9);
  TempDir dir;
  const RunFolder run(dir.str());
  make_dirs(run.tensorboard_dir());
  write_text(run.tensorboard_dir() + "/events.out.tfevents.0001.poslab", bytes);
  truncate_events_after(run, 20);
  using S = std::vector<std::pair<int64_t, std::string>>;
  EXPECT_EQ(scalars_of(run), (S{{0, "loss/batch"}, {0, "lr"}, {10, "loss/batch"}, {10, "lr"}}));
}

TEST(TensorboardFiles, MetricsRecordsBecomeTheirScalars) {
  const MetricsRecord r = metrics_record(nlohmann::json::parse(
      R"({"step": 40, "lr": 0.001, "loss": 3.5, "tokens_per_s": 1000.0, "train_loss": 3.25, "val_loss": null})"));
  std::vector<std::pair<std::string, double>> scalars;
  for (const TbScalar& s : metrics_scalars(r)) {
    EXPECT_EQ(s.step, 40);
    scalars.emplace_back(s.tag, s.value);
  }
  EXPECT_EQ(scalars, (std::vector<std::pair<std::string, double>>{
                         {"loss/batch", 3.5}, {"loss/train", 3.25}, {"lr", 0.001}, {"tokens_per_s", 1000.0}}))
      << "each tag with its own value; a null val_loss: none";
  EXPECT_TRUE(r.eval);
  const MetricsRecord val = metrics_record(nlohmann::json::parse(R"({"step": 50, "val_loss": 3.75})"));
  ASSERT_EQ(metrics_scalars(val).size(), 1u);
  EXPECT_EQ(metrics_scalars(val)[0].tag, "loss/val");
  EXPECT_EQ(metrics_scalars(val)[0].value, 3.75);
}

TEST(TensorboardFiles, AResumeCutsWhatItWritesAgainAndStartsANewFile) {
  TempDir dir;
  const RunFolder run(dir.str());
  write_text(run.snapshot_index(), "{\"step\": 0, \"file\": \"wpe_step000000.npy\"}\n");
  const float rows[6] = {1, 2, 3, 4, 5, 6.5f};  // the tables the index lists, whole: a resume reads their headers
  for (int64_t step : {0, 4}) write_text(run.snapshot(step), npy_bytes(rows, 3, 2));
  std::string first;
  {
    TensorboardLog log(run);
    first = log.events_path();
    EXPECT_EQ(fs::path(first).filename(), "events.out.tfevents.0001.poslab");
    const float table[6] = {1, 2, 3, 4, 5, 6.5f};
    log.add_table(0, table, 3, 2);
    log.add({{0, "table/k90", 1}, {0, "loss/val", 4}});
    log.add({{2, "loss/batch", 3}});
    append_line(run.snapshot_index(), "{\"step\": 4, \"file\": \"wpe_step000004.npy\"}");
    log.add_table(4, table, 3, 2);
    log.add({{4, "table/k90", 2}, {4, "loss/val", 3}});  // then the checkpoint at 4, the update, its record:
    log.add({{4, "loss/batch", 2.5}});
  }
  EXPECT_EQ(read_file(run.tensorboard_dir() + "/wpe_step000004.tsv"), "1\t2\n3\t4\n5\t6.5\n");
  EXPECT_EQ(read_file(run.tensorboard_dir() + "/positions.tsv"), "0\n1\n2\n");
  EXPECT_NE(read_file(run.tensorboard_dir() + "/projector_config.pbtxt").find("wpe_step000004.tsv"), std::string::npos);
  append_bytes(first, tf_record(tf_scalar_event(1.0, 6, "loss/batch", 2.0)).substr(0, 20));  // killed mid-append

  // Resumed from the checkpoint at step 4: step 4's table metrics stay (its snapshot is on disk), its other scalars
  // go (the resumed run writes its record again), and the torn record goes.
  truncate_logs_after(run, 4);
  using S = std::vector<std::pair<int64_t, std::string>>;
  EXPECT_EQ(scalars_of(run), (S{{0, "table/k90"}, {0, "loss/val"}, {2, "loss/batch"}, {4, "table/k90"}}));
  {
    TensorboardLog log(run);
    EXPECT_EQ(fs::path(log.events_path()).filename(), "events.out.tfevents.0002.poslab");
    log.add({{4, "loss/batch", 2.5}});
  }
  EXPECT_EQ(scalars_of(run),
            (S{{0, "table/k90"}, {0, "loss/val"}, {2, "loss/batch"}, {4, "table/k90"}, {4, "loss/batch"}}));

  // Resumed from step 2: the index loses step 4, and so does the projector's config.
  truncate_logs_after(run, 2);
  EXPECT_EQ(scalars_of(run), (S{{0, "table/k90"}, {0, "loss/val"}}));
  TensorboardLog log(run);
  EXPECT_EQ(fs::path(log.events_path()).filename(), "events.out.tfevents.0003.poslab");
  const std::string config = read_file(run.tensorboard_dir() + "/projector_config.pbtxt");
  EXPECT_NE(config.find("wpe_step000000.tsv"), std::string::npos) << config;
  EXPECT_EQ(config.find("wpe_step000004.tsv"), std::string::npos) << config;
  // Started again from nothing (no checkpoint): every scalar goes.
  truncate_logs_after(run, -1);
  EXPECT_TRUE(scalars_of(run).empty());
}

}  // namespace
}  // namespace poslab
