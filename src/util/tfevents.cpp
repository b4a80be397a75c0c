#include "util/tfevents.h"

#include <array>
#include <cstring>

namespace poslab {

namespace {

std::array<uint32_t, 256> crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = c & 1 ? 0x82F63B78u ^ (c >> 1) : c >> 1;  // Castagnoli, reflected
    t[i] = c;
  }
  return t;
}

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

// A length-delimited field (wire type 2).
void bytes_field(std::string& out, int field, const std::string& bytes) {
  varint(out, static_cast<uint64_t>(field) << 3 | 2);
  varint(out, bytes.size());
  out += bytes;
}

template <typename T>
void fixed_field(std::string& out, int field, int wire_type, T value) {
  varint(out, static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type));
  char b[sizeof(T)];
  std::memcpy(b, &value, sizeof(T));  // little-endian on every machine poslab builds for
  out.append(b, sizeof(T));
}

std::string event_head(double wall_time, int64_t step) {
  std::string e;
  fixed_field(e, 1, 1, wall_time);  // double wall_time = 1
  varint(e, 2 << 3 | 0);            // int64 step = 2
  varint(e, static_cast<uint64_t>(step));
  return e;
}

}  // namespace

uint32_t crc32c(const void* data, size_t n) {
  static const std::array<uint32_t, 256> table = crc_table();
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, size_t n) {
  const uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string tf_record(const std::string& bytes) {
  const uint64_t n = bytes.size();
  std::string out(reinterpret_cast<const char*>(&n), 8);
  const uint32_t len_crc = masked_crc32c(&n, 8), data_crc = masked_crc32c(bytes.data(), bytes.size());
  out.append(reinterpret_cast<const char*>(&len_crc), 4);
  out += bytes;
  out.append(reinterpret_cast<const char*>(&data_crc), 4);
  return out;
}

std::string tf_file_version_event(double wall_time) {
  std::string e = event_head(wall_time, 0);
  bytes_field(e, 3, "brain.Event:2");  // string file_version = 3
  return e;
}

std::string tf_scalar_event(double wall_time, int64_t step, const std::string& tag, float value) {
  std::string v;
  bytes_field(v, 1, tag);  // Summary.Value: string tag = 1
  fixed_field(v, 2, 5, value);  // float simple_value = 2
  std::string summary;
  bytes_field(summary, 1, v);  // Summary: repeated Value value = 1
  std::string e = event_head(wall_time, step);
  bytes_field(e, 5, summary);  // Summary summary = 5
  return e;
}

}  // namespace poslab
