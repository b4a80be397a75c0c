#include "formats/tfevents.h"

#include <array>
#include <chrono>
#include <cstring>

#include "formats/proto_wire.h"

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

bool parse_event(const std::string& bytes, TfEvent& e) {
  using proto::for_each_field;
  std::string summary;
  if (!for_each_field(bytes, [&](int field, int wire, size_t p, uint64_t n) {
        if (field == 1 && wire == 1) e.wall_time = proto::fixed<double>(bytes, p);
        if (field == 2 && wire == 0) e.step = static_cast<int64_t>(n);
        if (field == 3 && wire == 2) e.file_version = true;
        if (field == 5 && wire == 2) summary = bytes.substr(p, n);
      }))
    return false;
  std::string value;
  bool first = true;
  if (!for_each_field(summary, [&](int field, int wire, size_t p, uint64_t n) {
        if (field == 1 && wire == 2 && first) value = summary.substr(p, n), first = false;
      }))
    return false;
  return for_each_field(value, [&](int field, int wire, size_t p, uint64_t n) {
    if (field == 1 && wire == 2) e.tag = value.substr(p, n);
    if (field == 2 && wire == 5) e.value = proto::fixed<float>(value, p);
  });
}

}  // namespace

TfEventFile read_tf_events(const std::string& b) {
  TfEventFile f;
  size_t p = 0;
  while (b.size() - p >= 12) {
    uint64_t n = 0;
    uint32_t len_crc = 0, data_crc = 0;
    std::memcpy(&n, b.data() + p, 8);
    std::memcpy(&len_crc, b.data() + p + 8, 4);
    if (len_crc != masked_crc32c(b.data() + p, 8) || n > b.size() - p || b.size() - p - n < 16) break;
    std::memcpy(&data_crc, b.data() + p + 12 + n, 4);
    if (data_crc != masked_crc32c(b.data() + p + 12, n)) break;
    TfEvent e;
    if (!parse_event(b.substr(p + 12, n), e)) break;
    p += 16 + n;
    e.end = p;
    f.events.push_back(std::move(e));
  }
  f.valid = p;
  return f;
}

double tf_wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

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
  bytes_field(v, 1, tag);       // Summary.Value: string tag = 1
  fixed_field(v, 2, 5, value);  // float simple_value = 2
  std::string summary;
  bytes_field(summary, 1, v);  // Summary: repeated Value value = 1
  std::string e = event_head(wall_time, step);
  bytes_field(e, 5, summary);  // Summary summary = 5
  return e;
}

}  // namespace poslab
