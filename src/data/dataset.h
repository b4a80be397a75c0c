// From config to token ids: read the corpus, train or load the tokenizer, encode, split. All cached.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/tokenizer.h"

namespace poslab {

struct TokenData {
  Tokenizer tokenizer;
  std::vector<int32_t> train;  // token ids, head of the stream
  std::vector<int32_t> val;    // token ids, tail of the stream (data.val_fraction)
  bool tokenizer_from_cache = false;
  bool tokens_from_cache = false;
  std::string tokens_path;  // cache file of the encoded corpus
  std::string corpus_hash;  // content hash of the corpus text (checkpoints keep it to notice a changed corpus)
};

// The cache folder: data.cache_dir, else $POSLAB_CACHE_DIR, $XDG_CACHE_HOME/poslab, ~/.cache/poslab.
std::string cache_dir(const Config& cfg);

// Reads data.corpus, trains (or loads) the tokenizer and encodes, reusing cached results keyed by the
// corpus content and the tokenizer settings. Throws poslab::Error when a split is shorter than block_size + 1.
// With `given`, that tokenizer is used as it is (a checkpoint's own), and only the encoding is cached.
TokenData prepare_tokens(const Config& cfg, int threads, const Tokenizer* given = nullptr);

// Splits ids into train (head) and val (tail); checks both hold at least block_size + 1 tokens.
void split_tokens(const std::vector<int32_t>& ids, double val_fraction, int block_size, const std::string& source,
                  std::vector<int32_t>& train, std::vector<int32_t>& val);

}  // namespace poslab
