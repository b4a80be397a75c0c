// poslab's tokenizer in Hugging Face's terms: tokenizer.json, the file of the `tokenizers` library that
// AutoTokenizer.from_pretrained loads as a fast tokenizer. It encodes and decodes as poslab's Tokenizer does (data/
// tokenizer.h): each '\n' is the newline piece (an added token, so the lines between are encoded apart), spaces are
// sentencepiece's '▁', a character without a piece falls back to its UTF-8 byte pieces, and decoding maps the newline
// piece back to '\n'. The segmentation is sentencepiece's own: BPE with the merges its pieces imply (ranked by their
// scores, as transformers' own sentencepiece converter ranks them), the unigram model with its scores, and a char
// model as BPE without merges (each character its piece).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "formats/spm_model.h"

namespace poslab {

// Empty when tokenizer.json cannot say what sentencepiece does with the model's normaliser: a rule other than
// identity, a dummy prefix, extra whitespace removed, whitespace as a suffix, or a word model (every model poslab
// trains can be said); `why` then says which.
nlohmann::ordered_json hf_tokenizer_json(const SpmModel& m, const std::string& newline_piece, std::string* why);

// The BPE merges a sentencepiece BPE model's pieces imply: every split of a normal piece into two pieces of the
// vocabulary, by the merged piece's score (highest first), then by the two pieces' ids.
std::vector<std::pair<std::string, std::string>> spm_bpe_merges(const SpmModel& m);

}  // namespace poslab
