// libposlab_spm.so: sentencepiece behind a C interface (see spm_shim.h for why).
// Built as its own shared library; never linked into poslab or its tests directly.
#include "data/spm_shim.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <unordered_map>
#include <vector>

// Not in sentencepiece's public headers, exported by libsentencepiece.so.
namespace sentencepiece::logging {
void SetMinLogLevel(int v);
}

namespace {

// sentencepiece logs to std::cerr. Under RTLD_DEEPBIND it binds to libstdc++'s own std::cerr, which is
// never initialised when the executable holds a copy-relocated std::cerr (every non-PIC-data executable
// does): the first log line segfaults. Errors come back as Status values, so silence the logger.
struct Quiet {
  Quiet() { sentencepiece::logging::SetMinLogLevel(100); }
} const quiet;

void set_err(char* err, size_t errlen, const std::string& msg) {
  if (err == nullptr || errlen == 0) return;
  const size_t n = std::min(errlen - 1, msg.size());
  std::memcpy(err, msg.data(), n);
  err[n] = '\0';
}

// Hands a copy of `items` to the caller as a malloc'ed buffer. Returns 0, or 1 with a message.
template <typename T>
int copy_out(const T* items, size_t count, T** out, size_t* n, char* err, size_t errlen) {
  *out = static_cast<T*>(std::malloc(std::max<size_t>(1, count) * sizeof(T)));
  if (*out == nullptr) {
    set_err(err, errlen, "out of memory");
    return 1;
  }
  if (count > 0) std::memcpy(*out, items, count * sizeof(T));
  *n = count;
  return 0;
}

}  // namespace

extern "C" {

int poslab_spm_train(const char* input_path, const char* model_prefix, const char* model_type, int vocab_size,
                     const char* newline_piece, int hard_vocab_limit, int byte_fallback, int num_threads, char* err,
                     size_t errlen) {
  try {
    std::unordered_map<std::string, std::string> args = {
        {"input", input_path},
        {"model_prefix", model_prefix},
        {"model_type", model_type},
        {"vocab_size", std::to_string(vocab_size)},
        {"user_defined_symbols", newline_piece},
        {"character_coverage", "1.0"},            // every corpus character gets a piece: exact round trip
        {"normalization_rule_name", "identity"},  // keep the text as it is
        {"remove_extra_whitespaces", "false"},
        {"add_dummy_prefix", "false"},
        {"split_digits", "true"},
        {"bos_id", "-1"},
        {"eos_id", "-1"},
        {"pad_id", "-1"},
        {"unk_id", "0"},
        {"hard_vocab_limit", hard_vocab_limit ? "true" : "false"},
        {"byte_fallback", byte_fallback ? "true" : "false"},  // a character without a piece becomes its UTF-8 bytes
        {"input_sentence_size", "2000000"},
        {"shuffle_input_sentence", "true"},
        {"max_sentence_length", "16384"},
        {"num_threads", std::to_string(num_threads > 0 ? num_threads : 1)},
        {"minloglevel", "100"},  // see Quiet above
    };
    const auto status = sentencepiece::SentencePieceTrainer::Train(args);
    if (!status.ok()) {
      set_err(err, errlen, status.ToString());
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    return 1;
  }
}

void* poslab_spm_load(const char* data, size_t len, char* err, size_t errlen) {
  try {
    auto* sp = new sentencepiece::SentencePieceProcessor();
    const auto status = sp->LoadFromSerializedProto(std::string(data, len));
    if (!status.ok()) {
      set_err(err, errlen, status.ToString());
      delete sp;
      return nullptr;
    }
    return sp;
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    return nullptr;
  }
}

void poslab_spm_close(void* handle) { delete static_cast<sentencepiece::SentencePieceProcessor*>(handle); }

int poslab_spm_vocab_size(void* handle) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(handle)->GetPieceSize();
}

int poslab_spm_piece_to_id(void* handle, const char* piece) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(handle)->PieceToId(piece);
}

int poslab_spm_unk_id(void* handle) { return static_cast<sentencepiece::SentencePieceProcessor*>(handle)->unk_id(); }

int poslab_spm_encode(void* handle, const char* text, size_t len, int** out, size_t* n, char* err, size_t errlen) {
  try {
    std::vector<int> ids;
    const auto status =
        static_cast<sentencepiece::SentencePieceProcessor*>(handle)->Encode(std::string(text, len), &ids);
    if (!status.ok()) {
      set_err(err, errlen, status.ToString());
      return 1;
    }
    return copy_out(ids.data(), ids.size(), out, n, err, errlen);
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    return 1;
  }
}

int poslab_spm_decode(void* handle, const int* ids, size_t count, char** out, size_t* n, char* err, size_t errlen) {
  try {
    auto* sp = static_cast<sentencepiece::SentencePieceProcessor*>(handle);
    const int size = sp->GetPieceSize();
    for (size_t i = 0; i < count; ++i) {
      if (ids[i] < 0 || ids[i] >= size) {
        set_err(err, errlen,
                "token id " + std::to_string(ids[i]) + " is outside the vocabulary [0, " + std::to_string(size) + ")");
        return 1;
      }
    }
    std::string text;
    const auto status = sp->Decode(std::vector<int>(ids, ids + count), &text);
    if (!status.ok()) {
      set_err(err, errlen, status.ToString());
      return 1;
    }
    return copy_out(text.data(), text.size(), out, n, err, errlen);
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    return 1;
  }
}

void poslab_spm_free_buffer(void* p) { std::free(p); }

}  // extern "C"
