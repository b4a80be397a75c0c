// UTF-8 text checked: what the corpus reader and the sentencepiece model reader accept.
#pragma once

#include <cstddef>
#include <string>

namespace poslab {

// Replaces every byte that is not part of a valid UTF-8 sequence (a stray or cut byte, an overlong form, a
// surrogate, a code point past U+10FFFF) by U+FFFD; returns how many.
size_t sanitize_utf8(std::string& text);

}  // namespace poslab
