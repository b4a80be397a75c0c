// The words a mistyped one is likely a slip of: for "did you mean …?" hints (config keys, command options, a sweep
// file's keys). Torch-free.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace poslab {

// Edits (insertions, deletions, substitutions) from a to b.
inline size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The candidates within two edits of `word`, or (both of at least `min_contained` letters) one inside the other: a
// name shortened or run on. In the candidates' order.
inline std::vector<std::string> near_words(const std::string& word, const std::vector<std::string>& candidates,
                                           size_t min_contained = 5) {
  std::vector<std::string> near;
  for (const std::string& c : candidates) {
    const bool contains = word.size() >= min_contained && c.size() >= min_contained &&
                          (c.find(word) != std::string::npos || word.find(c) != std::string::npos);
    if (edit_distance(word, c) <= 2 || contains) near.push_back(c);
  }
  return near;
}

// "a", "a or b", "a, b or c".
inline std::string either(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) out += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return out;
}

// A tensor name looked up and missed: the error's list of the names there ("wpe.weight, wte.weight"; those naming
// positions first (position, wpe, pos_emb, pos_embed), then the rest in order, at most `max`, then "… and N more")
// and the hint (what it is likely a slip of, then `then`).
struct MissedName {
  std::string names, hint;
};
inline MissedName missed_name(const std::string& typed, std::vector<std::string> names, const std::string& then,
                              size_t max = 8) {
  MissedName out;
  const std::vector<std::string> near = near_words(typed, names, 5);
  if (!near.empty() && near.size() <= 3) out.hint = "did you mean " + either(near) + "?" + (then.empty() ? "" : " ");
  out.hint += then;
  std::stable_partition(names.begin(), names.end(), [](const std::string& n) {  // not "post_attention_layernorm"
    for (const char* w : {"position", "wpe", "pos_emb", "pos_embed"})
      if (n.find(w) != std::string::npos) return true;
    return false;
  });
  for (size_t i = 0; i < std::min(max, names.size()); ++i) out.names += (i ? ", " : "") + names[i];
  if (names.empty()) out.names = "(none)";
  if (names.size() > max) out.names += ", … and " + std::to_string(names.size() - max) + " more";
  return out;
}

}  // namespace poslab
