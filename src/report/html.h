// Small pieces of the HTML pages poslab writes (the report, the comparison, the watch page), free of LibTorch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace poslab {

// Escapes &, <, >, " for HTML text and attributes.
std::string html_escape(const std::string& s);

// RFC 4648 base64 of n bytes (the watch page decodes its quantised arrays with atob).
std::string base64(const uint8_t* bytes, size_t n);

}  // namespace poslab
