// Small pieces of the HTML pages poslab writes (the report, the comparison, the watch page), free of LibTorch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace poslab {

// Escapes &, <, >, " for HTML text and attributes.
std::string html_escape(const std::string& s);

// A relative path as a link's address: every byte but letters, digits and / . _ ~ - percent-encoded (a folder name
// with a space, '#' or '?' would otherwise end or change the address).
std::string href_path(const std::string& relative);

// Replaces the line `marker` of a page template (src/report/*.html) with `text`, whose last line is ended: the
// marker's own line ending goes with it. Throws poslab::Error when the template has no such line.
void fill_line(std::string& page, std::string_view marker, std::string_view text);

// RFC 4648 base64 of n bytes (the watch page decodes its quantised arrays with atob).
std::string base64(const uint8_t* bytes, size_t n);

}  // namespace poslab
