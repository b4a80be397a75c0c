#include "util/utf8.h"

#include <cstdint>

namespace poslab {

namespace {

// Replaces each byte of `text` outside a valid UTF-8 sequence by `replacement(byte)`; returns how many.
template <typename Replacement>
size_t replace_invalid_utf8(std::string& text, Replacement replacement) {
  std::string out;
  size_t replaced = 0;
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  bool changed = false;
  while (i < n) {
    const unsigned char c = s[i];
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      len = 1;
      cp = c;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    }
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80)
        ok = false;
      else
        cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    // Reject overlong forms, surrogates and code points past U+10FFFF.
    if (ok && ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
               (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF))
      ok = false;
    if (ok) {
      if (changed) out.append(text, i, len);
      i += len;
    } else {
      if (!changed) {
        out.assign(text, 0, i);
        changed = true;
      }
      out += replacement(s[i]);
      ++replaced;
      ++i;
    }
  }
  if (changed) text.swap(out);
  return replaced;
}

}  // namespace

size_t sanitize_utf8(std::string& text) {
  return replace_invalid_utf8(text, [](unsigned char) { return std::string("\xEF\xBF\xBD"); });
}

std::string escaped_utf8(std::string text) {
  replace_invalid_utf8(text, [](unsigned char byte) {
    static const char* kHex = "0123456789ABCDEF";
    return std::string{'\\', 'x', kHex[byte >> 4], kHex[byte & 15]};
  });
  return text;
}

bool is_utf8(const std::string& text) {
  std::string copy = text;
  return sanitize_utf8(copy) == 0;
}

size_t make_terminal_safe(std::string& text) {
  size_t replaced = sanitize_utf8(text);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) {
      const uint32_t picture = c == 0x7F ? 0x2421 : 0x2400 + c;  // U+2400 CONTROL PICTURES
      out += static_cast<char>(0xE0 | (picture >> 12));
      out += static_cast<char>(0x80 | ((picture >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (picture & 0x3F));
      ++replaced;
    } else if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      out += "\xEF\xBF\xBD";  // a C1 control (valid UTF-8 here, so the byte after 0xC2 is 0x80–0x9F)
      ++i;
      ++replaced;
    } else {
      out += text[i];
    }
  }
  text.swap(out);
  return replaced;
}

}  // namespace poslab
