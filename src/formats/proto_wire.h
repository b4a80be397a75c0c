// Protobuf's wire format read back, for the few messages poslab reads without protobuf's library (TensorBoard's
// events, sentencepiece's model): a message is a list of fields, each a key (field number, wire type) and a value.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace poslab::proto {

// A varint at b[p] (p advanced past it); false when the bytes end first.
inline bool read_varint(const std::string& b, size_t& p, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && p < b.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(b[p++]);
    v |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

// Calls f(field, wire_type, p, n) for each field of a message: for a varint (wire type 0) n is its value; else the
// value's n bytes start at b[p] (8 for fixed64, 4 for fixed32, the length of a length-delimited field). False when
// the bytes are not a message (a field runs past the end, or an unknown wire type).
template <typename F>
bool for_each_field(const std::string& b, F f) {
  size_t p = 0;
  while (p < b.size()) {
    uint64_t key = 0, n = 0;
    if (!read_varint(b, p, key)) return false;
    const int wire = static_cast<int>(key & 7);
    if (wire == 0) {
      if (!read_varint(b, p, n)) return false;
      f(static_cast<int>(key >> 3), wire, p, n);
      continue;
    }
    if (wire == 1) {
      n = 8;
    } else if (wire == 5) {
      n = 4;
    } else if (wire != 2 || !read_varint(b, p, n)) {
      return false;
    }
    if (n > b.size() - p) return false;
    f(static_cast<int>(key >> 3), wire, p, n);
    p += n;
  }
  return true;
}

template <typename T>
T fixed(const std::string& b,
        size_t p) {  // a fixed32 / fixed64 value (little-endian on every machine poslab builds for)
  T v;
  std::memcpy(&v, b.data() + p, sizeof(T));
  return v;
}

}  // namespace poslab::proto
