#include "data/corpus.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "util/error.h"
#include "util/utf8.h"

namespace poslab {
namespace fs = std::filesystem;

bool looks_binary(const std::string& head) { return head.substr(0, 8192).find('\0') != std::string::npos; }

std::string wrap_long_lines(const std::string& text, size_t max_bytes) {
  std::string out;
  out.reserve(text.size() + text.size() / max_bytes + 1);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    while (end - start > max_bytes) {
      size_t cut = text.rfind(' ', start + max_bytes);
      if (cut == std::string::npos || cut <= start) {
        cut = start + max_bytes;
        while (cut > start && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not mid-character
      }
      out.append(text, start, cut - start);
      out.push_back('\n');
      start = text[cut] == ' ' ? cut + 1 : cut;
    }
    out.append(text, start, end - start);
    if (end < text.size()) out.push_back('\n');
    start = end + 1;
  }
  return out;
}

std::string content_hash(const std::string& bytes, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

Corpus read_corpus(const std::vector<std::string>& paths) {
  std::vector<fs::path> candidates;
  for (const auto& p : paths) {
    std::error_code ec;
    if (!fs::exists(p, ec))
      throw Error(p + ": corpus path not found", "fix data.corpus: list existing files or folders");
    if (!fs::is_directory(p, ec) && !fs::is_regular_file(p, ec))  // a pipe reads forever or never, a device forever
      throw Error(p + ": not a file of text (a pipe, socket or device)", "fix data.corpus: copy the text into a file");
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> found;
      for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
           it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        if (it->is_regular_file(ec)) found.push_back(it->path());
      }
      std::sort(found.begin(), found.end());
      candidates.insert(candidates.end(), found.begin(), found.end());
    } else {
      candidates.push_back(p);
    }
  }

  Corpus corpus;
  std::set<fs::path> seen;
  for (const auto& path : candidates) {
    std::error_code ec;
    const fs::path canon = fs::canonical(path, ec);
    if (ec || !seen.insert(canon).second) continue;  // a second link to a file already read
    std::ifstream in(canon, std::ios::binary);
    if (!in) {
      corpus.skipped.push_back(path.string() + ": cannot be read (" + std::strerror(errno) + ")");
      continue;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    if (looks_binary(text)) {
      corpus.skipped.push_back(path.string() + ": binary (NUL bytes)");
      continue;
    }
    if (text.empty()) {
      corpus.skipped.push_back(path.string() + ": empty");
      continue;
    }
    if (const size_t replaced = sanitize_utf8(text); replaced > 0) {
      corpus.replaced_bytes += replaced;
      corpus.replaced_in.push_back(path.string());
    }
    if (text.back() != '\n') text.push_back('\n');
    corpus.text += text;
    corpus.files.push_back(canon.string());
  }

  const bool only_space =
      std::all_of(corpus.text.begin(), corpus.text.end(), [](unsigned char c) { return std::isspace(c) != 0; });
  if (corpus.text.empty() || only_space) {
    std::string list;
    for (const auto& p : paths) list += (list.empty() ? "" : ", ") + p;
    std::string why;  // what was left out, and why: the first one
    if (!corpus.skipped.empty()) why = " (" + corpus.skipped.front() + (corpus.skipped.size() > 1 ? ", …)" : ")");
    throw Error("data.corpus [" + list + "]: no text found (" + std::to_string(corpus.files.size()) + " text files, " +
                    std::to_string(corpus.skipped.size()) + " skipped" + why + ")",
                !corpus.skipped.empty() && corpus.skipped.front().find(": cannot be read (") != std::string::npos
                    ? "make the files readable by this user (ls -l shows who may read them), or point data.corpus at "
                      "UTF-8 text files"
                    : "point data.corpus at UTF-8 text files");
  }
  return corpus;
}

}  // namespace poslab
