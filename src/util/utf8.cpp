#include "util/utf8.h"

#include <cstdint>

namespace poslab {

size_t sanitize_utf8(std::string& text) {
  static const std::string kReplacement = "\xEF\xBF\xBD";
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
      out += kReplacement;
      ++replaced;
      ++i;
    }
  }
  if (changed) text.swap(out);
  return replaced;
}

}  // namespace poslab
