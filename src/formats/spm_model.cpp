#include "formats/spm_model.h"

#include "formats/proto_wire.h"
#include "util/error.h"
#include "util/utf8.h"

namespace poslab {

SpmModel read_spm_model(const std::string& b, const std::string& source) {
  using proto::for_each_field;
  SpmModel m;
  std::string trainer, normalizer;
  bool pieces_ok = true;
  const bool ok = for_each_field(b, [&](int field, int wire, size_t p, uint64_t n) {
    if (wire != 2) return;
    const std::string value = b.substr(p, n);
    if (field == 1) {  // repeated SentencePiece pieces = 1 { piece = 1, score = 2, type = 3 }
      SpmPiece piece;
      pieces_ok = pieces_ok && for_each_field(value, [&](int f, int w, size_t q, uint64_t k) {
                    if (f == 1 && w == 2) piece.piece = value.substr(q, k);
                    if (f == 2 && w == 5) piece.score = proto::fixed<float>(value, q);
                    if (f == 3 && w == 0) piece.type = static_cast<SpmPiece::Type>(k);
                  });
      m.pieces.push_back(std::move(piece));
    }
    if (field == 2) trainer = value;
    if (field == 3) normalizer = value;
  });
  // TrainerSpec: model_type = 3, treat_whitespace_as_suffix = 24, byte_fallback = 35, unk_surface = 44.
  const bool trainer_ok = for_each_field(trainer, [&](int f, int w, size_t q, uint64_t k) {
    if (f == 44 && w == 2) m.unk_surface = trainer.substr(q, k);
    if (w != 0) return;
    if (f == 3) m.kind = static_cast<SpmModel::Kind>(k);
    if (f == 24) m.treat_whitespace_as_suffix = k != 0;
    if (f == 35) m.byte_fallback = k != 0;
  });
  // NormalizerSpec: name = 1, precompiled_charsmap = 2, add_dummy_prefix = 3, remove_extra_whitespaces = 4,
  // escape_whitespaces = 5.
  const bool normalizer_ok = for_each_field(normalizer, [&](int f, int w, size_t q, uint64_t k) {
    if (f == 1 && w == 2) m.normalizer = normalizer.substr(q, k);
    if (f == 2 && w == 2) m.precompiled_charsmap = normalizer.substr(q, k);
    if (f == 3 && w == 0) m.add_dummy_prefix = k != 0;
    if (f == 4 && w == 0) m.remove_extra_whitespaces = k != 0;
    if (f == 5 && w == 0) m.escape_whitespaces = k != 0;
  });
  const int kind = static_cast<int>(m.kind);
  if (!ok || !pieces_ok || !trainer_ok || !normalizer_ok || m.pieces.empty() || kind < 1 || kind > 4)
    throw Error(source + ": not a sentencepiece model (its bytes are not a ModelProto with pieces)",
                "pass a .model file written by sentencepiece");
  if (std::string surface = m.unk_surface; sanitize_utf8(surface) > 0)
    throw Error(source + ": the sentencepiece model's unk_surface is not UTF-8 text",
                "pass a .model file written by sentencepiece");
  for (size_t i = 0; i < m.pieces.size(); ++i)
    if (std::string piece = m.pieces[i].piece; sanitize_utf8(piece) > 0)
      throw Error(source + ": piece " + std::to_string(i) + " of the sentencepiece model is not UTF-8 text",
                  "pass a .model file written by sentencepiece");
  return m;
}

const char* spm_kind_name(SpmModel::Kind kind) {
  switch (kind) {
    case SpmModel::Kind::unigram:
      return "unigram";
    case SpmModel::Kind::bpe:
      return "bpe";
    case SpmModel::Kind::word:
      return "word";
    case SpmModel::Kind::character:
      return "char";
  }
  return "unknown";
}

bool encodes_apart_at_spaces(const SpmModel& m) {
  // Unigram's Viterbi sums its scores in float along the whole line, so a near tie after a cut may fall otherwise;
  // without byte fallback, unknown characters on both sides of a cut would be one <unk> whole and two cut.
  if (m.kind == SpmModel::Kind::unigram || !m.byte_fallback) return false;
  if (m.treat_whitespace_as_suffix || m.add_dummy_prefix || m.remove_extra_whitespaces || !m.escape_whitespaces ||
      !m.precompiled_charsmap.empty())
    return false;
  for (const SpmPiece& p : m.pieces)  // "▁" (U+2581) anywhere but at a piece's start would join across a space
    if (p.piece.find("\xE2\x96\x81", 1) != std::string::npos) return false;
  return true;
}

}  // namespace poslab
