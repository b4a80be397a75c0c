// A sentencepiece model's own description, read from its bytes (the .model file: a ModelProto) without
// sentencepiece: its pieces with their scores and kinds, the segmentation it runs and how it normalises text. What an
// export needs to write the same tokenizer in another library's terms (export/hf_tokenizer.h).
#pragma once

#include <string>
#include <vector>

namespace poslab {

struct SpmPiece {
  enum class Type { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };
  std::string piece;
  float score = 0.0f;
  Type type = Type::normal;
};

struct SpmModel {
  enum class Kind { unigram = 1, bpe = 2, word = 3, character = 4 };
  std::vector<SpmPiece> pieces;  // by id
  Kind kind = Kind::unigram;
  bool byte_fallback = false;
  std::string unk_surface = " \xE2\x81\x87 ";  // what decoding <unk> writes: " ⁇ ", sentencepiece's default
  // The normaliser (NormalizerSpec): its rule's name and compiled map ("identity": none), and its switches.
  std::string normalizer = "nmt_nfkc";
  std::string precompiled_charsmap;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
  bool treat_whitespace_as_suffix = false;
};

// Throws poslab::Error naming `source` when the bytes are not a sentencepiece model.
SpmModel read_spm_model(const std::string& bytes, const std::string& source);

const char* spm_kind_name(SpmModel::Kind kind);  // "unigram", "bpe", "word", "char"

// Whether a text cut just before any of its spaces encodes, piece for piece, as the whole text does: a BPE, char or
// word model (not unigram, whose float Viterbi may break a near tie otherwise after a cut) with byte fallback (no
// run of <unk> to join across a cut), no piece holding a space ("▁") past its start, spaces escaped as prefixes, and
// nothing added to a text's ends, taken from them or changed in it (no dummy prefix, no whitespace removal, no
// normaliser's map). poslab's own BPE and char tokenizers are so; a very long line is then encoded in pieces
// (sentencepiece's encoding of one long line is slower than linear).
bool encodes_apart_at_spaces(const SpmModel& m);

}  // namespace poslab
