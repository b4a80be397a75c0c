// Sentencepiece tokenizer, reached through libposlab_spm.so (see spm_shim.h).
// Text is encoded line by line; each '\n' becomes the user-defined piece kNewlinePiece. The text is never
// normalised, and every model falls back to UTF-8 byte pieces (<0x09>, ...) for a character without a piece of
// its own, so decode(encode(t)) == t for any text. (sentencepiece never makes a piece of a tab, whatever the
// type: without byte fallback a tab would be <unk>.)
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace poslab {

inline constexpr const char* kNewlinePiece = "\xE2\x90\xA4";  // U+2424 SYMBOL FOR NEWLINE

// How poslab trains a tokenizer, part of the cache key: raised whenever the training options change, so that a
// tokenizer cached by an older poslab is never reused. 2: byte fallback (256 byte pieces) for every type.
inline constexpr int kTokenizerRecipe = 2;

class Tokenizer {
 public:
  // Trains a model on a UTF-8 text file and returns the serialized model (the .model file's bytes).
  // type: bpe | unigram | char. For char, vocab_size is an upper bound (the corpus's characters decide).
  // Every model holds the 256 byte pieces, <unk> and the newline piece besides.
  static std::string train(const std::string& text_file, const std::string& work_prefix, const std::string& type,
                           int vocab_size, int threads);

  static Tokenizer from_file(const std::string& model_path);  // a .model file
  static Tokenizer from_bytes(const std::string& model_bytes, const std::string& source_name);

  std::vector<int> encode(std::string_view text) const;
  // Whether a line longer than line_chunk() bytes is encoded in pieces cut before its spaces, each as long as that
  // at most where a space allows: the same ids as the whole line (encodes_apart_at_spaces), each piece's encoding
  // short (a stretch without a space stays whole).
  bool cuts_long_lines() const { return cut_at_spaces_; }
  size_t line_chunk() const { return line_chunk_; }
  void set_line_chunk(size_t bytes) { line_chunk_ = bytes; }  // 0: never cut (tests compare the two)
  std::string decode(const std::vector<int>& ids) const;
  int vocab_size() const;
  int newline_id() const { return newline_id_; }  // -1 when the model has no newline piece
  const std::string& model_bytes() const { return bytes_; }

 private:
  struct Handle;
  std::shared_ptr<Handle> handle_;
  std::string bytes_;
  std::string source_;
  int newline_id_ = -1;
  bool cut_at_spaces_ = false;
  size_t line_chunk_ = 4096;
};

// Where libposlab_spm.so is searched: $POSLAB_SPM_SHIM, next to the running executable, the build folder.
std::string spm_shim_path();

}  // namespace poslab
