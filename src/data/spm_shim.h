// Plain C interface of libposlab_spm.so, the only code that links sentencepiece.
//
// Why a shim: Debian's libsentencepiece carries its own protobuf (3.14) and exports its symbols, while
// LibTorch loads the system libprotobuf (3.21). Linked into one program they clash (segfault at start-up or
// "compiled against version 3.14.0" abort). Tokenizer opens this library with
// dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND) so each side binds to its own protobuf. sentencepiece's
// logging is silenced inside the shim (see Quiet in spm_shim.cpp): under DEEPBIND it would crash.
//
// Conventions: functions that can fail take `err`/`errlen` and write a NUL-terminated message there.
// Buffers returned through `out` are malloc'ed by the shim and released with poslab_spm_free_buffer.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// Trains a model on a UTF-8 text file (one sentence per line) and writes PREFIX.model and PREFIX.vocab.
// model_type: "bpe" | "unigram" | "char". newline_piece: a user-defined symbol that stands for '\n'.
// hard_vocab_limit: 0 lets sentencepiece use fewer pieces than vocab_size (needed for char).
// byte_fallback: 1 adds the 256 byte pieces <0x00>..<0xFF>, so text with any character encodes without <unk>.
int poslab_spm_train(const char* input_path, const char* model_prefix, const char* model_type, int vocab_size,
                     const char* newline_piece, int hard_vocab_limit, int byte_fallback, int num_threads, char* err,
                     size_t errlen);

// Loads a model from its serialized bytes (the content of a .model file). Returns NULL on error.
void* poslab_spm_load(const char* data, size_t len, char* err, size_t errlen);
void poslab_spm_close(void* handle);

int poslab_spm_vocab_size(void* handle);
int poslab_spm_piece_to_id(void* handle, const char* piece);  // unk id when absent
int poslab_spm_unk_id(void* handle);

// Encodes one line (no '\n'). *out receives n ids. Returns 0 on success.
int poslab_spm_encode(void* handle, const char* text, size_t len, int** out, size_t* n, char* err, size_t errlen);
// Decodes ids to UTF-8. *out receives n bytes (not NUL-terminated). Returns 0 on success.
int poslab_spm_decode(void* handle, const int* ids, size_t count, char** out, size_t* n, char* err, size_t errlen);

void poslab_spm_free_buffer(void* p);

#ifdef __cplusplus
}
#endif
