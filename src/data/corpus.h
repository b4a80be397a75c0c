// Reading a text corpus from files and folders.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace poslab {

struct Corpus {
  std::vector<std::string> files;        // text files read, in order (canonical paths)
  std::vector<std::string> skipped;      // "path: reason" for binary or unreadable files left out
  std::string text;                      // UTF-8; files joined, each ending with '\n'
  size_t replaced_bytes = 0;             // invalid UTF-8 bytes replaced by U+FFFD
  std::vector<std::string> replaced_in;  // the files that held them
};

// Collects the files (folders recursively, sorted, symlinks to the same file once) and reads them.
// A file with a NUL byte in its first 8 KiB is binary and skipped. Invalid UTF-8 bytes are replaced
// by U+FFFD and counted. Throws poslab::Error for a missing path or when no text remains.
Corpus read_corpus(const std::vector<std::string>& paths);

// True when the first 8 KiB of `head` contain a NUL byte.
bool looks_binary(const std::string& head);

// Breaks lines longer than max_bytes (at the last space before the limit, else at a UTF-8 character
// boundary) so that a tokenizer trainer with a line-length limit still sees every character.
std::string wrap_long_lines(const std::string& text, size_t max_bytes);

// 64-bit FNV-1a hash, hex encoded: a content key for caches.
std::string content_hash(const std::string& bytes, uint64_t seed = 14695981039346656037ULL);

}  // namespace poslab
