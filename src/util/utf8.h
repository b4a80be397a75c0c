// UTF-8 text checked: what the corpus reader and the sentencepiece model reader accept.
#pragma once

#include <cstddef>
#include <string>

namespace poslab {

// Replaces every byte that is not part of a valid UTF-8 sequence (a stray or cut byte, an overlong form, a
// surrogate, a code point past U+10FFFF) by U+FFFD; returns how many.
size_t sanitize_utf8(std::string& text);

// Whether `text` is valid UTF-8 throughout.
bool is_utf8(const std::string& text);

// `text` with each byte outside a valid UTF-8 sequence written as \xHH ("n\xFFu"): a name that is no UTF-8, shown
// in a message as what it holds.
std::string escaped_utf8(std::string text);

// Text for a terminal: valid UTF-8 (sanitize_utf8), each control character but newline and tab shown as its
// Unicode picture (ESC as U+241B ␛, BEL as ␇, DEL as ␡) and each C1 control (U+0080–U+009F) as U+FFFD, so that no
// byte of generated text moves the cursor, rings or changes the terminal's state. Returns how many were replaced.
size_t make_terminal_safe(std::string& text);

}  // namespace poslab
