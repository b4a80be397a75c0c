#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "test_util.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/output_paths.h"

namespace poslab {
namespace {

using test::error_of;
using test::TempDir;
namespace fs = std::filesystem;

TEST(Fs, AtomicWriteReplacesTheFileAndLeavesNoTemporary) {
  TempDir dir;
  write_file_atomic(dir / "a.txt", "first");
  write_file_atomic(dir / "a.txt", "second");
  EXPECT_EQ(read_file(dir / "a.txt"), "second");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.str())) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

// TensorBoard reads every file whose name holds "tfevents": a temporary one a killed writer leaves must not.
TEST(Fs, ATemporaryEventFileIsNoEventFileToTensorBoard) {
  TempDir dir;
  const std::string events = dir / "events.out.tfevents.poslab";
  {
    AtomicWriter out(events);
    out.write("x", 1);
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir.str())) names.push_back(e.path().filename().string());
    ASSERT_EQ(names.size(), 1u);
    EXPECT_EQ(names[0], "events.out.tf-events.poslab.tmp." + std::to_string(::getpid()));
    out.commit();
  }
  EXPECT_EQ(read_file(events), "x");
  EXPECT_EQ(remove_stale_temporaries(dir.str()), 0);
}

// A folder where the file should go: named as a folder, with the reason kept (the temporary's removal must not
// replace it), and nothing left behind.
TEST(Fs, AWriteOntoAFolderSaysItIsAFolder) {
  TempDir dir;
  std::filesystem::create_directories(dir / "out");
  const std::string e = error_of([&] { write_file_atomic(dir / "out", "bytes"); });
  EXPECT_NE(e.find(dir / "out" + ": is a folder, not a file"), std::string::npos) << e;
  EXPECT_EQ(e.find("Success"), std::string::npos) << e;
  EXPECT_NE(e.find("name a file inside it"), std::string::npos) << e;
  int files = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir.str())) files += f.is_regular_file();
  EXPECT_EQ(files, 0) << "the temporary file is left behind";
}

// --out, --json, --profile: stdout passes; a folder, a file the command reads (by any spelling or link) and an
// existing file without --force are errors naming the option and the path; a place that takes no file is found
// before the work (a trial file, removed), in a missing folder's nearest folder above; the check leaves nothing
// behind, and write_output_file makes the missing folder.
TEST(Fs, AnOutputFileIsNeitherAFolderNorAnInputNorAnExistingFileWithoutForce) {
  TempDir dir;
  check_output_file("-", "--json", false, {"-"});
  test::write_text(dir / "in.pt", "weights");
  std::filesystem::create_symlink(dir / "in.pt", dir / "link.pt");
  std::filesystem::create_directories(dir / "sub");
  EXPECT_NE(
      error_of([&] { check_output_file(dir / "sub", "--out", true); }).find("--out " + dir / "sub" + ": is a folder"),
      std::string::npos);
  for (const std::string& same : {dir / "in.pt", dir / "sub/../in.pt", dir / "link.pt"}) {
    const std::string e = error_of([&] { check_output_file(same, "--out", true, {dir / "in.pt"}); });
    EXPECT_NE(e.find("--out " + same + ": is the file this command reads (" + dir / "in.pt" + ")"), std::string::npos)
        << e;
  }
  test::write_text(dir / "old.csv", "position,loss\n");
  const std::string e = error_of([&] { check_output_file(dir / "old.csv", "--out", false, {dir / "in.pt"}); });
  EXPECT_NE(e.find("--out " + dir / "old.csv" + ": already exists | name a new file, or pass --force to replace it"),
            std::string::npos)
      << e;
  check_output_file(dir / "old.csv", "--out", true, {dir / "in.pt"});
  check_output_file(dir / "new.csv", "--out", false, {dir / "in.pt"});
  check_output_file(dir / "missing/deeper/new.csv", "--out", false);  // to be made where dir is: nothing made yet
  EXPECT_FALSE(std::filesystem::exists(dir / "missing"));
  for (const std::string& under_a_file : {dir / "old.csv/x.json", dir / "old.csv/deeper/x.json"}) {
    const std::string e = error_of([&] { check_output_file(under_a_file, "--json", false); });
    EXPECT_NE(e.find("--json " + under_a_file + ": cannot be written there (" + dir / "old.csv" +
                     " is a file) | name --json a file in a folder you can write to"),
              std::string::npos)
        << e;
  }
  EXPECT_EQ(read_file(dir / "old.csv"), "position,loss\n");
  EXPECT_EQ(read_file(dir / "in.pt"), "weights");
  int entries = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir.str())) entries += !f.path().empty();
  EXPECT_EQ(entries, 4) << "in.pt, link.pt, sub/, old.csv: no trial file left";
  write_output_file(dir / "missing/deeper/new.csv", "a,b\n");  // where the command writes it, its folder made
  EXPECT_EQ(read_file(dir / "missing/deeper/new.csv"), "a,b\n");
  EXPECT_NE(error_of([] {
              check_output_file("/proc/x.json", "--json", false);
            }).find("--json /proc/x.json: cannot be written there (/proc: "),
            std::string::npos);
}

// What a refused folder holds, as errors list it, and inputs given twice by any spelling.
TEST(Fs, FolderContentsAndInputsGivenOnce) {
  TempDir dir;
  EXPECT_EQ(folder_contents(dir / "missing"), "");
  EXPECT_EQ(folder_contents(dir.str()), "");
  test::write_text(dir / "a.txt", "a");
  EXPECT_EQ(folder_contents(dir.str()), "1 file or folder (a.txt)");
  for (const char* name : {"b", "c", "d"}) std::filesystem::create_directories(dir / name);
  test::write_text(dir / "e.txt", "e");  // five: three of them named, then the ellipsis
  const std::string five = folder_contents(dir.str());
  EXPECT_EQ(five.rfind("5 files or folders (", 0), 0u) << five;
  EXPECT_EQ(five.size() - five.rfind(", …)"), std::string(", …)").size()) << five;
  size_t commas = 0;
  for (size_t at = five.find(", "); at != std::string::npos; at = five.find(", ", at + 1)) ++commas;
  EXPECT_EQ(commas, 3u) << "three names and the ellipsis: " << five;
  std::filesystem::remove(dir / "e.txt");
  std::filesystem::remove(dir / "d");  // three: all named, no ellipsis
  const std::string three = folder_contents(dir.str());
  EXPECT_EQ(three.rfind("3 files or folders (", 0), 0u) << three;
  EXPECT_EQ(three.find("…"), std::string::npos) << three;
  for (const char* name : {"a.txt", "b", "c"}) EXPECT_NE(three.find(name), std::string::npos) << three;

  GivenOnce given("compare", "name each table once");
  given.add(dir / "a.txt", "a.txt");
  given.add(dir / "b", "b");
  std::filesystem::create_symlink(dir / "a.txt", dir / "link.txt");
  for (const std::string& again : {dir / "a.txt", dir / "b/../a.txt", dir / "link.txt"})
    EXPECT_EQ(error_of([&] { given.add(again, "it again"); }),
              "compare: " + again + " is given twice (as a.txt and as it again) | name each table once");
}

// A folder that cannot be made because a file holds its place (or its parent's): that file is named, with the
// caller's hint.
TEST(Fs, AFolderBlockedByAFileNamesTheFile) {
  TempDir dir;
  test::write_text(dir / "runs", "a file");
  const std::string e = error_of([&] { make_dirs(dir / "runs/default/checkpoints", "set run.out_dir elsewhere"); });
  EXPECT_NE(e.find("cannot create folder: " + dir / "runs" + " is a file"), std::string::npos) << e;
  EXPECT_NE(e.find("| set run.out_dir elsewhere"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { make_dirs(dir / "runs/x"); }).find("choose a writable location"), std::string::npos);
}

// The folders make_dirs makes, as create_directories walks the path (a ".." step through a missing folder makes that
// folder too); and taken away again: the last with what it holds, those above only where nothing else came in.
// A write that fills a new folder and fails part way takes the folders it made away again (a report, a comparison);
// one that succeeds keeps them and gives back what it returned; a folder that was there stays.
TEST(Fs, AFailedWriteIntoANewFolderTakesItAway) {
  TempDir dir;
  EXPECT_EQ(error_of([&] {
              writing_into(dir / "new/page", [&] {
                make_dirs(dir / "new/page/figures");
                test::write_text(dir / "new/page/half.dat", "1 2\n");
                throw Error("gnuplot failed", "see its log");
                return 0;
              });
            }),
            "gnuplot failed | see its log");
  EXPECT_FALSE(std::filesystem::exists(dir / "new"));
  EXPECT_EQ(writing_into(dir / "kept",
                         [&] {
                           make_dirs(dir / "kept");
                           return std::string("kept/index.html");
                         }),
            "kept/index.html");
  EXPECT_TRUE(std::filesystem::is_directory(dir / "kept"));
  test::write_text(dir / "kept/mine.txt", "mine");
  EXPECT_THROW(writing_into(dir / "kept", [&]() -> int { throw Error("failed", ""); }), Error);
  EXPECT_EQ(read_file(dir / "kept/mine.txt"), "mine") << "a folder that was there is not taken away";
  // An error after which the files written are the output all the same (gnuplot missing: the data and scripts).
  EXPECT_THROW(writing_into(dir / "data/page",
                            [&]() -> int {
                              test::write_text(dir / "data/page/figure.gp", "plot x");
                              throw KeptOutputError("gnuplot not found", "");
                            }),
               KeptOutputError);
  EXPECT_EQ(read_file(dir / "data/page/figure.gp"), "plot x");
}

TEST(Fs, MissingFoldersAreTheOnesMakeDirsMakesAndAreTakenAwayAgain) {
  TempDir dir;
  EXPECT_EQ(missing_folders(dir.str()), std::vector<std::string>{});
  EXPECT_EQ(missing_folders(dir / "a/b/c"), (std::vector<std::string>{dir / "a", dir / "a/b", dir / "a/b/c"}));
  EXPECT_EQ(missing_folders(dir / "a/b/"), (std::vector<std::string>{dir / "a", dir / "a/b"}));
  const std::vector<std::string> dotted = missing_folders(dir / "x/../a/b");
  EXPECT_EQ(dotted, (std::vector<std::string>{dir / "x", dir / "x/../a", dir / "x/../a/b"}));
  make_dirs(dir / "x/../a/b");
  test::write_text(dir / "a/b/config.yaml", "run:\n");
  EXPECT_TRUE(remove_made_folders(dotted));
  EXPECT_FALSE(fs::exists(dir / "x"));
  EXPECT_FALSE(fs::exists(dir / "a"));

  const std::vector<std::string> made = missing_folders(dir / "new/runs/one");
  EXPECT_EQ(made.size(), 3u);
  make_dirs(dir / "new/runs/one/checkpoints");
  test::write_text(dir / "new/runs/two/config.yaml", "run:\n");  // another run, started meanwhile
  EXPECT_TRUE(remove_made_folders(made));
  EXPECT_FALSE(fs::exists(dir / "new/runs/one"));
  EXPECT_EQ(read_file(dir / "new/runs/two/config.yaml"), "run:\n");
  EXPECT_TRUE(remove_made_folders({}));
  EXPECT_EQ(missing_folders("no_such_folder_here/runs"),
            (std::vector<std::string>{"no_such_folder_here", "no_such_folder_here/runs"}));
}

// A real "no space left on device": the temporary file is a link to /dev/full, which fails every write with
// ENOSPC. The error names the file and the reason, and the previous contents survive.
TEST(Fs, DiskFullIsAnErrorNamingThePathAndKeepsThePreviousFile) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "/dev/full is absent";
  TempDir dir;
  const std::string path = dir / "table.npy";
  write_file_atomic(path, "previous");
  std::filesystem::create_symlink("/dev/full", path + ".tmp." + std::to_string(::getpid()));
  const std::string msg = error_of([&] { write_file_atomic(path, std::string(1 << 16, 'x')); });
  EXPECT_NE(msg.find(path + ": write failed: No space left on device"), std::string::npos) << msg;
  EXPECT_NE(msg.find("previous file is intact"), std::string::npos) << msg;
  EXPECT_EQ(read_file(path), "previous");
}

TEST(Fs, AppendToAFullDiskIsAnErrorNamingThePath) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "/dev/full is absent";
  TempDir dir;
  const std::string path = dir / "metrics.jsonl";
  std::filesystem::create_symlink("/dev/full", path);
  const std::string msg = error_of([&] { append_line(path, "{\"step\": 1}"); });
  EXPECT_NE(msg.find(path + ": cannot append: No space left on device"), std::string::npos) << msg;
}

TEST(Fs, StaleTemporariesOfKilledWritersAreRemovedAndNothingElse) {
  TempDir dir;
  for (const char* f : {"latest.pt.tmp.1420", "wpe_step000100.npy.tmp.77", "latest.pt", "notes.tmp.txt", "x.tmp."})
    test::write_text(dir / f, "x");
  EXPECT_EQ(remove_stale_temporaries(dir.str()), 2);
  EXPECT_FALSE(std::filesystem::exists(dir / "latest.pt.tmp.1420"));
  EXPECT_FALSE(std::filesystem::exists(dir / "wpe_step000100.npy.tmp.77"));
  for (const char* f : {"latest.pt", "notes.tmp.txt", "x.tmp."}) EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  EXPECT_EQ(remove_stale_temporaries(dir / "missing"), 0);
}

// Without a lock, only the temporaries of the files named whose writers are gone: a live one's (this process's), and
// a dead one's of another file, stay.
TEST(Fs, DeadWritersTemporariesAreRemovedAndALiveOnesStay) {
  TempDir dir;
  const pid_t dead = test::dead_pid();
  const std::string gone = "spectrum.png.tmp." + std::to_string(dead);
  const std::string live = "spectrum.svg.tmp." + std::to_string(::getpid());
  const std::string other = "notes.txt.tmp." + std::to_string(dead);  // a dead writer's, of no file named
  const std::vector<std::string> stay = {live, other, "notes.tmp.txt", "spectrum.png.tmp.99999999999"};
  test::write_text(dir / gone, "x");
  for (const std::string& f : stay) test::write_text(dir / f, "x");
  const std::vector<std::string> names = {"spectrum.png", "spectrum.svg"};
  EXPECT_EQ(remove_dead_temporaries(dir.str(), names), 1);
  EXPECT_FALSE(std::filesystem::exists(dir / gone));
  for (const std::string& f : stay) EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  EXPECT_EQ(remove_dead_temporaries(dir / "missing", names), 0);
}

// A training run's own record (a folder holding config.yaml and checkpoints/) is no output, --force or not, there
// or not yet: its files, any file in its checkpoints/ or snapshots/ (one named as its next snapshot would be taken
// for the run's), its lock. Another file in the run folder is an output like any.
TEST(Fs, ARunsOwnRecordIsNoOutput) {
  TempDir dir;
  std::filesystem::create_directories(dir / "run/checkpoints");
  std::filesystem::create_directories(dir / "run/snapshots");
  for (const char* f : {"run/config.yaml", "run/metrics.jsonl", "run/checkpoints/latest.pt", "run/checkpoints/best.pt",
                        "run/snapshots/index.jsonl", "run/snapshots/wpe_step000010.npy", "run/mine.csv"})
    test::write_text(dir / f, "x");
  for (const char* own : {"run/config.yaml", "run/metrics.jsonl"}) {
    const std::string e = error_of([&] { check_output_file(dir / own, "--out", true); });
    EXPECT_EQ(e, "--out " + dir / own + ": is a file of the training run in " + dir / "run" +
                     ", which no other command writes | name a file outside the run's own record (its analysis/, "
                     "eval/, extend/ or report/ folders, or elsewhere)");
  }
  EXPECT_EQ(error_of([&] { check_output_file(dir / "run/lock", "--out", false); }),
            "--out " + dir / "run/lock" + ": is the name of a file of the training run in " + dir / "run" +
                ", which no other command writes | name a file outside the run's own record (its analysis/, eval/, "
                "extend/ or report/ folders, or elsewhere)");
  for (const char* within :
       {"run/checkpoints/latest.pt", "run/checkpoints/best.pt", "run/checkpoints/ext.pt", "run/snapshots/index.jsonl",
        "run/snapshots/wpe_step000010.npy", "run/snapshots/wpe_step000020.npy"}) {
    const std::string e = error_of([&] { check_output_file(dir / within, "--out", true); });
    EXPECT_EQ(
        e.rfind("--out " + dir / within + ": is in " + std::filesystem::path(dir / within).parent_path().string() +
                    ", a folder of the training run in " + dir / "run" + ", which no other command writes into",
                0),
        0u)
        << e;
  }
  check_output_file(dir / "run/mine.csv", "--out", true);          // not the run's: --force replaces it
  check_output_file(dir / "run/analysis/x.json", "--out", false);  // what commands write
  test::write_text(dir / "loose/metrics.jsonl", "x");              // not in a run folder: an output like any
  check_output_file(dir / "loose/metrics.jsonl", "--out", true);
}

// A run's own folders (the run folder, checkpoints/, snapshots/, tensorboard/ and folders in those, by any spelling or
// link) take no command's output folder, --force or not; its analysis/, report/ and export/ do, as does any other
// folder, but one that holds files only with --force.
TEST(Fs, AnOutputFolderIsNoRunsOwnFolderAndAFullOneNeedsForce) {
  TempDir dir;
  for (const char* d : {"run/checkpoints", "run/snapshots", "run/tensorboard", "run/export/hf", "other"})
    std::filesystem::create_directories(dir / d);
  test::write_text(dir / "run/config.yaml", "x");
  std::filesystem::create_directory_symlink(dir / "run", dir / "link");
  const std::string run = dir / "run";
  for (const std::string& own : {run, run + "/", dir / "run/checkpoints", dir / "run/snapshots",
                                 dir / "run/tensorboard", dir / "link/tensorboard", dir / "run/export/../snapshots",
                                 dir / "run/snapshots/wpe_step000010_report", dir / "link/checkpoints/a/b"}) {
    EXPECT_EQ(run_record_of(own), run) << own;
    EXPECT_EQ(error_of([&] { check_output_folder(own, "--export", true); }),
              "--export " + own + ": is a folder of the training run in " + run +
                  ", which no other command writes into | name a folder outside the run's own record (e.g. " + run +
                  "/export, or elsewhere)");
  }
  for (const std::string& free : {dir / "run/export", dir / "run/export/hf", dir / "run/report", dir / "other",
                                  dir.str(), dir / "missing/deeper"}) {
    EXPECT_EQ(run_record_of(free), "") << free;
    check_output_folder(free, "--export", true);
  }
  test::write_text(dir / "other/bench.json", "{}");
  EXPECT_EQ(error_of([&] { check_output_folder(dir / "other", "--export", false); }),
            "--export " + dir / "other" +
                ": already holds 1 file or folder (bench.json) | name a new folder, or pass --force to write into it "
                "(files of the same name are replaced)");
  check_output_folder(dir / "other", "--export", true);
  EXPECT_EQ(
      error_of([&] { check_output_folder(dir / "other/bench.json", "--export", true); }),
      "--export " + dir / "other/bench.json" + ": is a file, not a folder | name a folder that does not exist yet");
  check_output_folder("", "--export", false);  // none asked for
  EXPECT_EQ(read_file(dir / "other/bench.json"), "{}");
  // A sweep's folder (its sweep.json), --force or not.
  test::write_text(dir / "sweep/sweep.json", "{}");
  EXPECT_EQ(error_of([&] { check_output_folder(dir / "sweep", "--out", true); }),
            "--out " + dir / "sweep" +
                ": is the folder of a sweep (it holds sweep.json), which only poslab sweep writes into | name a folder "
                "outside it");
  // The hint proposes the folder the caller names (export's default) in place of the run's export/.
  EXPECT_EQ(error_of([&] { check_output_folder(dir / "run/snapshots/hf", "--out", false, "/runs/a/export/hf"); }),
            "--out " + dir / "run/snapshots/hf" + ": is a folder of the training run in " + run +
                ", which no other command writes into | name a folder outside the run's own record (e.g. "
                "/runs/a/export/hf, or elsewhere)");
  // A folder in the corpus folder, there or not yet, --force or not: what is written there would join the corpus.
  std::filesystem::create_directories(dir / "texts");
  for (const std::string& out : {dir / "texts", dir / "texts/hf", dir / "texts/../texts/new/hf"})
    EXPECT_EQ(error_of([&] {
                check_output_folder(out, "--out", true, "", {dir / "corpus.txt", dir / "texts"});
              }),
              "--out " + out + ": is in the corpus folder " + dir / "texts" +
                  " (data.corpus): what is written there would join the corpus | name a folder outside it");
  check_output_folder(dir / "hf", "--out", true, "", {dir / "corpus.txt", dir / "texts"});
}

// The corpus a command's config names is no output, --force or not: a file of it (by any spelling or link) would be
// replaced, a file in a folder of it would join the corpus of the next run.
TEST(Fs, AnOutputFileIsNoFileOfTheCorpusNorInItsFolder) {
  TempDir dir;
  std::filesystem::create_directories(dir / "texts/deeper");
  test::write_text(dir / "corpus.txt", "to be");
  test::write_text(dir / "texts/a.txt", "or not");
  std::filesystem::create_symlink(dir / "corpus.txt", dir / "link.txt");
  const std::vector<std::string> corpus = {dir / "corpus.txt", dir / "texts"};
  for (const std::string& file : {dir / "corpus.txt", dir / "link.txt", dir / "texts/../corpus.txt"})
    EXPECT_EQ(error_of([&] { check_output_file(file, "--out", true, {}, corpus); }),
              "--out " + file + ": is a file of the corpus (data.corpus: " + dir / "corpus.txt" +
                  "): the output would replace it | name another file");
  for (const std::string& inside : {dir / "texts/a.txt", dir / "texts/new.json", dir / "texts/deeper/x/new.json"})
    EXPECT_EQ(error_of([&] { check_output_file(inside, "--out", true, {}, corpus); }),
              "--out " + inside + ": is in the corpus folder " + dir / "texts" +
                  " (data.corpus): the output would join the corpus | name a file outside it");
  check_output_file(dir / "texts.json", "--out", false, {}, corpus);  // beside the folder, not in it
  check_output_file(dir / "eval.csv", "--out", false, {}, corpus);
  EXPECT_EQ(read_file(dir / "corpus.txt"), "to be");
  EXPECT_EQ(read_file(dir / "texts/a.txt"), "or not");
}

// A write's error says what to do about its cause where errno names one other than a full disk, whose hint stays the
// writer's own: the folder's permissions, a read-only disk, a file where a folder goes, a folder where a file goes.
TEST(Fs, AWriteFaultsHintNamesItsCause) {
  const std::string log = "/r/snapshots/index.jsonl";
  EXPECT_EQ(write_fault_cause(EACCES, log),
            "this user may not write in /r/snapshots: check its permissions (ls -ld "
            "/r/snapshots)");
  EXPECT_EQ(write_fault_cause(EPERM, log), write_fault_cause(EACCES, log));
  EXPECT_EQ(write_fault_cause(EROFS, log),
            "/r/snapshots is on a read-only file system: remount it writable, or work on a writable disk");
  EXPECT_EQ(write_fault_cause(ENOTDIR, log),
            "a part of " + log + " is a file where a folder goes: move that file away");
  EXPECT_EQ(write_fault_cause(EISDIR, log), log + " is a folder where a file goes: move it away");
  EXPECT_EQ(write_fault_cause(ENOENT, "metrics.jsonl"), ". is gone (moved or deleted while poslab ran): put it back");
  for (const int full : {ENOSPC, EDQUOT, EFBIG, EIO}) EXPECT_EQ(write_fault_cause(full, log), "") << full;
  // Said by the writers: an append onto a folder; an atomic write and a sync under a file.
  TempDir dir;
  std::filesystem::create_directories(dir / "metrics.jsonl");
  EXPECT_EQ(error_of([&] { append_line(dir / "metrics.jsonl", "{}"); }),
            dir / "metrics.jsonl" + ": cannot append: Is a directory | " + dir / "metrics.jsonl" +
                " is a folder where a file goes: move it away");
  test::write_text(dir / "snapshots", "a file");
  EXPECT_EQ(error_of([&] { write_file_atomic(dir / "snapshots/index.jsonl", "{}\n"); }),
            dir / "snapshots/index.jsonl" + ": write failed: " + dir / "snapshots/index.jsonl.tmp." +
                std::to_string(::getpid()) + ": Not a directory | a part of " + dir / "snapshots/index.jsonl" +
                " is a file where a folder goes: move that file away; the previous file is intact");
  EXPECT_EQ(read_file(dir / "snapshots"), "a file");
}

TEST(Fs, AppendAddsLinesAndUnwritablePlacesAreErrors) {
  TempDir dir;
  append_line(dir / "log", "one");
  append_line(dir / "log", "two");
  EXPECT_EQ(read_file(dir / "log"), "one\ntwo\n");
  std::filesystem::create_directories(dir / "folder");
  EXPECT_NE(error_of([&] { append_line(dir / "folder", "x"); }).find("folder: cannot append"), std::string::npos);
  EXPECT_NE(error_of([&] { read_file(dir / "missing"); }).find("missing: cannot open"), std::string::npos);
}

// An append cut short (a file-size limit here; a full disk alike) is taken back: the next line starts a line, where
// a reader would otherwise find half a line in the middle of the log.
TEST(Fs, AShortAppendIsTakenBackSoTheNextLineStartsALine) {
  TempDir dir;
  const std::string log = dir / "log";
  append_line(log, "one");
  // The limit and SIGXFSZ's handler as they were, whatever leaves this test: the other tests write files
  struct FileSizeLimit {
    rlimit old{};
    void (*handler)(int) = std::signal(SIGXFSZ, SIG_IGN);
    bool set = false;
    explicit FileSizeLimit(rlim_t bytes) {
      rlimit small{};
      if (::getrlimit(RLIMIT_FSIZE, &old) != 0) return;
      small = old;
      small.rlim_cur = bytes;
      set = ::setrlimit(RLIMIT_FSIZE, &small) == 0;
    }
    ~FileSizeLimit() {
      ::setrlimit(RLIMIT_FSIZE, &old);
      std::signal(SIGXFSZ, handler);
    }
  };
  std::string msg;
  {
    const FileSizeLimit limit(4 + 5);  // "one\n" and 5 bytes of the next line
    ASSERT_TRUE(limit.set);
    msg = error_of([&] { append_line(log, "a line longer than the limit"); });
  }
  EXPECT_NE(msg.find(log + ": cannot append: short write"), std::string::npos) << msg;
  EXPECT_EQ(read_file(log), "one\n");
  append_line(log, "two");
  EXPECT_EQ(read_file(log), "one\ntwo\n");
}

// What disk_fault says of a folder: nothing on a disk that takes writes or a folder that does not exist; on a small
// tmpfs mounted read-only, or filled to its last page, the cause a write there would meet.
TEST(Fs, DiskFaultNamesAFullOrReadOnlyDisk) {
  TempDir dir;
  EXPECT_EQ(disk_fault(dir.str()), "");
  EXPECT_EQ(disk_fault(dir / "missing"), "");
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root (not this user)";
  const std::string mnt = dir / "mnt";
  std::filesystem::create_directory(mnt);
  ASSERT_EQ(::mount("tmpfs", mnt.c_str(), "tmpfs", MS_RDONLY, "size=1m"), 0) << std::strerror(errno);
  EXPECT_EQ(disk_fault(mnt), std::strerror(EROFS));
  ASSERT_EQ(::umount(mnt.c_str()), 0);
  ASSERT_EQ(::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m"), 0) << std::strerror(errno);
  EXPECT_EQ(disk_fault(mnt), "") << "an empty 1 MB tmpfs takes writes";
  const int fd = ::open((mnt + "/fill").c_str(), O_WRONLY | O_CREAT, 0644);
  const std::string block(4096, 'x');
  while (::write(fd, block.data(), block.size()) > 0) {
  }
  ::close(fd);
  EXPECT_EQ(disk_fault(mnt), std::strerror(ENOSPC));
  ::umount(mnt.c_str());
}

}  // namespace
}  // namespace poslab
