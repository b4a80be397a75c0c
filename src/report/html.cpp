#include "report/html.h"

#include <cctype>

#include "util/error.h"

namespace poslab {

std::string href_path(const std::string& relative) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : relative) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '_' || c == '~' || c == '-') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

void fill_line(std::string& page, std::string_view marker, std::string_view text) {
  const std::string line = std::string(marker) + "\n";
  const size_t at = page.find(line);
  if (at == std::string::npos)
    throw Error("page template: no line " + std::string(marker), "the template under src/report/ lost its marker line");
  page.replace(at, line.size(), text);
}

std::string base64(const uint8_t* bytes, size_t n) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t b = (uint32_t{bytes[i]} << 16) | (i + 1 < n ? uint32_t{bytes[i + 1]} << 8 : 0u) |
                       (i + 2 < n ? uint32_t{bytes[i + 2]} : 0u);
    out += kAlphabet[(b >> 18) & 63];
    out += kAlphabet[(b >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(b >> 6) & 63] : '=';
    out += i + 2 < n ? kAlphabet[b & 63] : '=';
  }
  return out;
}

}  // namespace poslab
