// Small file helpers: whole-file reads and crash-safe writes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "util/error.h"

namespace poslab {

// What to do about a failed open, write, sync or rename at `path` when errno `err` names a cause other than a full
// disk (permissions, a read-only disk, a folder where a file goes, a file where a folder goes, a folder gone); ""
// for the rest, whose hint is the caller's (free space, the disk). Every writer here says it in its error's hint.
std::string write_fault_cause(int err, const std::string& path);

// Reads a whole file; throws poslab::Error naming the path.
std::string read_file(const std::string& path);

// Writes `bytes` to `path` atomically: a temporary file in the same folder, fsync, rename, fsync of the folder.
// On failure the previous file at `path` is untouched and poslab::Error names the path.
void write_file_atomic(const std::string& path, const std::string& bytes);

// A file written in pieces and then committed atomically (temporary PATH.tmp.<pid>, an event file's spelled
// "tf-events" for TensorBoard not to read it; fsync, rename). write()
// never throws: the first failure (ENOSPC, EFBIG, ...) is remembered, later writes are dropped, and commit()
// reports it as poslab::Error naming the path, leaving the previous file at PATH untouched. Used for
// checkpoints, which LibTorch streams through a callback.
class AtomicWriter {
 public:
  // what: a few words for errors ("cannot write checkpoint"); hint: what the user should do about a full disk;
  // after: what follows any fix (said after the fix of another cause: a folder's permissions, a read-only disk).
  explicit AtomicWriter(std::string path, std::string what = "write failed",
                        std::string hint = "free some space and run again; the previous file is intact",
                        std::string after = "the previous file is intact");
  ~AtomicWriter();  // removes the temporary file unless committed
  AtomicWriter(const AtomicWriter&) = delete;
  AtomicWriter& operator=(const AtomicWriter&) = delete;

  void write(const void* data, std::size_t n);
  void commit();

 private:
  std::string path_, what_, hint_, after_, tmp_, failure_;
  int failure_errno_ = 0;  // the first failure's errno; 0 for a short write
  int fd_ = -1;
  bool committed_ = false;
  bool written_ = false;  // a first write happened (the body's crash point)
};

// Removes the temporary files AtomicWriter leaves behind when a process is killed mid-write (NAME.tmp.<pid>) from
// `dir` (not recursive); returns how many. Call it only while holding the folder's lock: no writer is running.
int remove_stale_temporaries(const std::string& dir);
// The same, without a lock, for the files `names` (file names in `dir`) a command is about to write: their temporaries
// whose process is gone (a report, an analysis or an extension killed mid-write; the pid read as this machine's),
// never a live writer's, nor any other file. Returns how many.
int remove_dead_temporaries(const std::string& dir, const std::vector<std::string>& names);

// A command's output file (check_output_file's): its folder made if missing, then written atomically.
void write_output_file(const std::string& path, const std::string& bytes);

// fsyncs a file, then renames it over `to` and fsyncs the folder. Throws poslab::Error naming the paths (a failed
// sync too: nothing is renamed then).
void commit_file(const std::string& tmp, const std::string& to);

// Creates a folder and its parents; throws poslab::Error naming it (and a file in its way), with `hint` (default: a
// writable location or the permissions) for where the folder's place comes from, e.g. the config key. Each folder it
// makes is synced into the folder above, as well as that goes: a disk that fails it fails the next file's sync, which
// says so.
void make_dirs(const std::string& dir, const std::string& hint = "");

// The folders make_dirs(dir) would make, in the order it makes them: each prefix of `dir` as written that is missing
// ("a/b", "a/b/c" for a/b/c when a exists; "." and ".." steps left out); none when `dir` exists. What a command that
// fails takes away again with remove_made_folders.
std::vector<std::string> missing_folders(const std::string& dir);

// Takes away the folders `made` (missing_folders' list, made since): the last, the command's own, with all it
// holds; each one above it only where it is empty, so that what another process put there since stays. Returns
// false, leaving the rest, where a removal fails.
bool remove_made_folders(const std::vector<std::string>& made);

// write(), which fills the folder `dir`: where it throws, the folders it made for `dir` are taken away again
// (remove_made_folders), so that a half-written new folder does not refuse the next try as one of other files;
// a KeptOutputError leaves them, with what was written.
template <typename Write>
auto writing_into(const std::string& dir, Write&& write) {
  const std::vector<std::string> made = missing_folders(dir);
  try {
    return write();
  } catch (const KeptOutputError&) {
    throw;
  } catch (...) {
    remove_made_folders(made);
    throw;
  }
}

// Appends one line (a '\n' is added) to a file, flushing it.
void append_line(const std::string& path, const std::string& line);
// Appends bytes to a file (created when missing) in one write.
void append_bytes(const std::string& path, const std::string& bytes);

// fsyncs a file written by appends, and its folder (which holds its name from its first append): what was appended
// so far outlives a power loss. No crash point: a kill there leaves what a kill after the last append leaves. A file
// that is not there is no error (a log not yet begun); one that cannot be synced throws poslab::Error naming it.
void sync_appended(const std::string& path);

// Crash points, for the tests that end a run at every durable step of its writes (docs/faults.md). Each step the
// functions above take -- a folder made, a file opened for writing, its body written (an AtomicWriter's first
// write), each append, each fsync, each rename, each folder fsync -- is a point, numbered from 1 in the order this
// process reaches them. Set by the environment, read once:
//   POSLAB_CRASH_AT=N      the process ends at point N, before its step, as SIGKILL ends it (raise(SIGKILL): no
//                          destructor, no flush, no exit handler)
//   POSLAB_CRASH_TORN=1    with it: when point N writes bytes, the first half of them are written first
//   POSLAB_CRASH_LOG=FILE  every point reached is appended to FILE as "N KIND PATH" (the log is no point itself)
// Unset, a point costs one branch. Writers outside this file (the run's lock) mark their steps with these.
void crash_point(const char* kind, const std::string& path);
// A write of n bytes to fd at a crash point: torn there when armed so, else nothing (the caller then writes).
void crash_point_write(int fd, const void* data, std::size_t n, const std::string& path);

// Why nothing more can be written in `dir`, when that is the disk's state: "No space left on device" (less than
// 64 KiB free for this user), "Read-only file system"; "" when the disk takes writes (or `dir` cannot be read).
// For the errors of programs that fail without saying why (gnuplot on a full disk writes no log).
std::string disk_fault(const std::string& dir);

}  // namespace poslab
