// Small file helpers: whole-file reads and crash-safe writes.
#pragma once

#include <string>

namespace poslab {

// Reads a whole file; throws poslab::Error naming the path.
std::string read_file(const std::string& path);

// Writes `bytes` to `path` atomically: a temporary file in the same folder, fsync, rename, fsync of the folder.
// On failure the previous file at `path` is untouched and poslab::Error names the path.
void write_file_atomic(const std::string& path, const std::string& bytes);

// fsyncs a file, then renames it over `to` and fsyncs the folder. Throws poslab::Error naming the paths.
void commit_file(const std::string& tmp, const std::string& to);

// Creates a folder and its parents; throws poslab::Error naming it.
void make_dirs(const std::string& dir);

// Appends one line (a '\n' is added) to a file, flushing it.
void append_line(const std::string& path, const std::string& line);

}  // namespace poslab
