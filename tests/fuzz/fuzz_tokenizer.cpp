// libFuzzer target: a sentencepiece model read from the cache or from data.tokenizer.model (bytes through the
// sentencepiece shim, src/data/spm_shim.h), and by poslab itself for the export (src/formats/spm_model.h, then
// tokenizer.json). Any bytes must give a tokenizer that encodes and decodes a line, or a
// poslab::Error naming the file — never a crash inside sentencepiece. Seeds: with POSLAB_FUZZ_SEED_DIR set, the target
// first trains a small char and a small BPE model on a few lines and writes them there (scripts/fuzz.sh does).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "data/tokenizer.h"
#include "export/hf_tokenizer.h"
#include "formats/spm_model.h"
#include "util/error.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("POSLAB_FUZZ_SEED_DIR");
  if (dir == nullptr) return 0;
  const std::string base = std::string(dir) + "/train-" + std::to_string(::getpid());
  std::ofstream text(base + ".txt");
  for (int i = 0; i < 200; ++i) text << "To be, or not to be, that is the question " << i << "\nWhether 'tis nobler\n";
  text.close();
  try {
    for (const auto& [type, vocab] : {std::pair<std::string, int>{"char", 300}, {"bpe", 320}}) {
      const std::string bytes = poslab::Tokenizer::train(base + ".txt", base, type, vocab, 1);
      std::ofstream(std::string(dir) + "/" + type + ".model", std::ios::binary) << bytes;
    }
  } catch (const poslab::Error& e) {
    std::fprintf(stderr, "fuzz_tokenizer: no seed models: %s\n", e.what());
  }
  std::remove((base + ".txt").c_str());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {  // poslab's own reading of the model (its pieces, for the export's tokenizer.json)
    std::string why;
    poslab::hf_tokenizer_json(poslab::read_spm_model(bytes, "fuzz.model"), poslab::kNewlinePiece, &why).dump();
  } catch (const poslab::Error&) {
  }
  try {
    const auto t = poslab::Tokenizer::from_bytes(bytes, "fuzz.model");
    const std::vector<int> ids = t.encode("To be, or not to be\n\tthat is the question: 42 €\n");
    t.decode(ids);
    t.vocab_size();
  } catch (const poslab::Error&) {
  }
  return 0;
}
