// Where commands write what their user names: output folders and files checked before the work (never a training
// run's own record, a sweep's folder, the command's inputs or the corpus), and inputs named once each.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace poslab {

// The training run whose own record a folder is (the run folder itself, or its checkpoints/, snapshots/ or
// tensorboard/ and any folder inside those; symbolic links followed), "" for any other: no command writes its output
// there, --force or not.
std::string run_record_of(const std::string& dir);

// Where a path really is: absolute, links followed, ".." resolved, a trailing slash dropped ("out/" is "out"); the
// path need not exist. Two spellings of one place compare equal.
std::string real_place(const std::string& path);

// Whether `path` is `folder` or lies inside it, each by its real place.
bool lies_within(const std::string& path, const std::string& folder);

// A folder a command fills where its user says (`option`: "--export"; an empty path, none, passes): not a file, not a
// training run's own record (run_record_of) nor a sweep's folder even with `force`, and one that holds anything only
// with `force` (its files of the same names are replaced). Throws poslab::Error naming the option and the folder; the
// hint for a run's record proposes `instead` (default: that run's export/ folder).
// Nor a folder in the corpus (`corpus`: data.corpus's files and folders), where what is written would join it.
void check_output_folder(const std::string& dir, const std::string& option, bool force, const std::string& instead = "",
                         const std::vector<std::string>& corpus = {});

// A file a command writes where its user says (`option`: "--out", "--json", "--profile"; the path "-", stdout,
// passes): not a folder, not one of the files the command reads (`inputs`: replaced, they would be lost), not a file
// of the corpus its config names nor in a folder of it (`corpus`: data.corpus's files and folders), an existing
// file only with `force` (an empty path, no output, passes too), and a place that takes a file: its folder, or where
// that is missing the nearest folder above it, which the command will make it in (write_output_file) (a trial file
// is made there and removed). Checked before the command's work; it leaves nothing behind. Throws poslab::Error
// naming the option and the path.
void check_output_file(const std::string& path, const std::string& option, bool force,
                       const std::vector<std::string>& inputs = {}, const std::vector<std::string>& corpus = {});

// What a folder holds, for an error that refuses to write into it: "3 files or folders (a, b, c)", "5 files or
// folders (a, b, c, …)", "1 file or folder (x)"; "" for an empty or missing folder.
std::string folder_contents(const std::string& dir);

// Inputs named once each, whatever their spelling (a/../a, ./a, a link to a): a command that reads several (compare)
// would count one twice. add() throws poslab::Error "COMMAND: PATH is given twice (as FIRST and as SECOND)".
class GivenOnce {
 public:
  GivenOnce(std::string command, std::string hint) : command_(std::move(command)), hint_(std::move(hint)) {}
  void add(const std::string& path, const std::string& as);

 private:
  std::string command_, hint_;
  std::map<std::string, std::string> seen_;  // the first name, by canonical path
};

}  // namespace poslab
