#include "export/hf_tokenizer.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace poslab {

namespace {

using json = nlohmann::ordered_json;

json replace(const std::string& from, const std::string& to) {
  return {{"type", "Replace"}, {"pattern", {{"String", from}}}, {"content", to}};
}

// A rule that replaces one whole token, `token`, with `to`: a regular expression anchored at the token's ends, the
// token's characters escaped.
json replace_token(const std::string& token, const std::string& to) {
  std::string pattern = "^";
  for (const char c : token) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) pattern += '\\';
    pattern += c;
  }
  return {{"type", "Replace"}, {"pattern", {{"Regex", pattern + "$"}}}, {"content", to}};
}

// The offsets where a UTF-8 character starts, past the first.
std::vector<size_t> char_boundaries(const std::string& s) {
  std::vector<size_t> out;
  for (size_t i = 1; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) out.push_back(i);
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> spm_bpe_merges(const SpmModel& m) {
  std::unordered_map<std::string, int> id;
  for (size_t i = 0; i < m.pieces.size(); ++i)
    if (m.pieces[i].type == SpmPiece::Type::normal) id.emplace(m.pieces[i].piece, static_cast<int>(i));
  struct Merge {
    float score;
    int left, right;
  };
  std::vector<Merge> merges;
  for (const SpmPiece& p : m.pieces) {
    if (p.type != SpmPiece::Type::normal) continue;
    for (const size_t at : char_boundaries(p.piece)) {
      const auto l = id.find(p.piece.substr(0, at)), r = id.find(p.piece.substr(at));
      if (l != id.end() && r != id.end()) merges.push_back({p.score, l->second, r->second});
    }
  }
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.left != b.left ? a.left < b.left : a.right < b.right;
  });
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (const Merge& g : merges) out.emplace_back(m.pieces[g.left].piece, m.pieces[g.right].piece);
  return out;
}

json hf_tokenizer_json(const SpmModel& m, const std::string& newline_piece, std::string* why) {
  std::string cannot;
  if (m.normalizer != "identity")
    cannot = "its normalisation rule " + m.normalizer;
  else if (m.add_dummy_prefix)
    cannot = "its dummy prefix (add_dummy_prefix)";
  else if (m.remove_extra_whitespaces)
    cannot = "its whitespace removal (remove_extra_whitespaces)";
  else if (m.treat_whitespace_as_suffix)
    cannot = "whitespace as a suffix (treat_whitespace_as_suffix)";
  else if (m.kind == SpmModel::Kind::word)
    cannot = "a word model";
  if (!cannot.empty()) {
    if (why) *why = cannot;
    return json();
  }
  // The newline piece (user-defined, as any other) is an added token, matched in the normalised text where '\n' has
  // become it; <unk> and control pieces are not: sentencepiece never reads them from text, so "<unk>" typed in a
  // text is its characters.
  std::string unk = "<unk>";
  int unk_id = 0;
  json added = json::array();
  for (size_t i = 0; i < m.pieces.size(); ++i) {
    const SpmPiece& p = m.pieces[i];
    if (p.type == SpmPiece::Type::unknown) unk = p.piece, unk_id = static_cast<int>(i);
    if (p.type != SpmPiece::Type::user_defined) continue;
    added.push_back({{"id", i},
                     {"content", p.piece},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", true},
                     {"special", false}});
  }
  json normalizers = json::array({replace("\n", newline_piece)});
  // <unk> decodes to the model's unk_surface (" ⁇ "), as sentencepiece decodes it; matched as a whole token, before
  // the tokens are joined, so "<unk>" typed in a text decodes to its characters.
  json decoders = json::array({replace_token(unk, m.unk_surface)});
  if (m.escape_whitespaces) {
    normalizers.push_back(replace(" ", "\xE2\x96\x81"));  // U+2581, sentencepiece's space
    decoders.push_back(replace("\xE2\x96\x81", " "));
  }
  decoders.push_back({{"type", "ByteFallback"}});
  decoders.push_back({{"type", "Fuse"}});
  decoders.push_back(replace(newline_piece, "\n"));
  json model;
  if (m.kind == SpmModel::Kind::unigram) {
    json vocab = json::array();
    for (const SpmPiece& p : m.pieces) vocab.push_back(json::array({p.piece, p.score}));
    model = {{"type", "Unigram"}, {"unk_id", unk_id}, {"vocab", vocab}, {"byte_fallback", m.byte_fallback}};
  } else {  // bpe, or char: BPE without merges
    json vocab = json::object();
    for (size_t i = 0; i < m.pieces.size(); ++i) vocab[m.pieces[i].piece] = i;
    json merges = json::array();
    if (m.kind == SpmModel::Kind::bpe)
      for (const auto& [l, r] : spm_bpe_merges(m)) merges.push_back(json::array({l, r}));
    model = {{"type", "BPE"},
             {"dropout", nullptr},
             {"unk_token", unk},
             {"continuing_subword_prefix", nullptr},
             {"end_of_word_suffix", nullptr},
             {"fuse_unk", true},
             {"byte_fallback", m.byte_fallback},
             {"ignore_merges", false},
             {"vocab", vocab},
             {"merges", merges}};
  }
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", {{"type", "Sequence"}, {"normalizers", normalizers}}},
          {"pre_tokenizer", nullptr},
          {"post_processor", nullptr},
          {"decoder", {{"type", "Sequence"}, {"decoders", decoders}}},
          {"model", model}};
}

}  // namespace poslab
