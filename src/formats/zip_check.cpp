#include "formats/zip_check.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <vector>

#include "util/error.h"

namespace poslab {
namespace {

constexpr uint32_t kEndOfDirectory = 0x06054b50, kZip64End = 0x06064b50, kZip64Locator = 0x07064b50,
                   kDirectoryEntry = 0x02014b50, kLocalHeader = 0x04034b50;
constexpr uint32_t kFar = 0xFFFFFFFF;  // a 32-bit size or offset whose value is in the zip64 extra field

uint64_t le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

struct Archive {
  std::string path;
  std::ifstream in;
  uint64_t size = 0;

  [[noreturn]] void damaged(const std::string& why) const {
    throw Error(path + ": not a readable zip archive (" + why + ")",
                "the file is damaged or cut short: use another copy of it");
  }
  std::string read(uint64_t at, uint64_t n) {
    if (at > size || n > size - at) damaged("a record reaches past the end of the file");
    std::string bytes(n, '\0');
    in.seekg(static_cast<std::streamoff>(at));
    in.read(bytes.data(), static_cast<std::streamsize>(n));
    if (static_cast<uint64_t>(in.gcount()) != n) damaged("cannot read " + std::to_string(n) + " bytes");
    return bytes;
  }
};

// One record as the directory lists it.
struct Entry {
  std::string name;
  uint32_t crc = 0;
  uint16_t method = 0;
  uint64_t compressed = 0, local_header = 0;
};

// The directory's offset and record count, from the end record (and the zip64 end record it points to).
std::pair<uint64_t, uint64_t> find_directory(Archive& a) {
  const uint64_t tail_size = std::min<uint64_t>(a.size, 22 + 65535);  // the end record and its comment at most
  const std::string tail = a.read(a.size - tail_size, tail_size);
  if (tail.size() < 22) a.damaged("too short for a zip archive");
  for (size_t at = tail.size() - 22 + 1; at-- > 0;) {
    if (le(&tail[at], 4) != kEndOfDirectory) continue;
    uint64_t count = le(&tail[at + 10], 2), offset = le(&tail[at + 16], 4);
    if (count == 0xFFFF || offset == kFar) {  // zip64: the locator sits just before the end record
      const uint64_t end_at = a.size - tail_size + at;
      if (end_at < 20) a.damaged("no zip64 locator");
      const std::string locator = a.read(end_at - 20, 20);
      if (le(locator.data(), 4) != kZip64Locator) a.damaged("no zip64 locator");
      const std::string end64 = a.read(le(&locator[8], 8), 56);
      if (le(end64.data(), 4) != kZip64End) a.damaged("no zip64 end record");
      count = le(&end64[32], 8);
      offset = le(&end64[48], 8);
    }
    return {offset, count};
  }
  a.damaged("no end of the central directory");
}

std::vector<Entry> read_directory(Archive& a) {
  auto [at, count] = find_directory(a);
  std::vector<Entry> entries;
  for (uint64_t i = 0; i < count; ++i) {
    const std::string head = a.read(at, 46);
    if (le(head.data(), 4) != kDirectoryEntry) a.damaged("directory entry " + std::to_string(i) + " is not one");
    const uint64_t name_len = le(&head[28], 2), extra_len = le(&head[30], 2), comment_len = le(&head[32], 2);
    Entry e;
    e.method = static_cast<uint16_t>(le(&head[10], 2));
    e.crc = static_cast<uint32_t>(le(&head[16], 4));
    e.compressed = le(&head[20], 4);
    const uint64_t uncompressed = le(&head[24], 4);
    e.local_header = le(&head[42], 4);
    e.name = a.read(at + 46, name_len);
    // zip64 extra field (id 1): the 64-bit values of the 32-bit fields that hold 0xFFFFFFFF, in this order
    const std::string extra = a.read(at + 46 + name_len, extra_len);
    for (size_t x = 0; x + 4 <= extra.size();) {
      const uint64_t id = le(&extra[x], 2), len = le(&extra[x + 2], 2);
      if (x + 4 + len > extra.size()) a.damaged("directory entry " + e.name + " has a cut extra field");
      if (id == 1) {
        size_t v = x + 4;
        auto next = [&]() {
          if (v + 8 > x + 4 + len) a.damaged("directory entry " + e.name + " has a short zip64 field");
          v += 8;
          return le(&extra[v - 8], 8);
        };
        if (uncompressed == kFar) next();
        if (e.compressed == kFar) e.compressed = next();
        if (e.local_header == kFar) e.local_header = next();
      }
      x += 4 + len;
    }
    entries.push_back(e);
    at += 46 + name_len + extra_len + comment_len;
  }
  return entries;
}

}  // namespace

std::string first_damaged_zip_record(const std::string& path) {
  Archive a{path, std::ifstream(path, std::ios::binary), 0};
  if (!a.in) throw Error(path + ": cannot open", "check that the file exists and can be read");
  a.in.seekg(0, std::ios::end);
  a.size = static_cast<uint64_t>(a.in.tellg());
  std::vector<char> buffer(1 << 20);
  for (const Entry& e : read_directory(a)) {
    if (e.method != 0) continue;  // compressed: LibTorch writes none
    const std::string local = a.read(e.local_header, 30);
    if (le(local.data(), 4) != kLocalHeader) return e.name;
    uint64_t at = e.local_header + 30 + le(&local[26], 2) + le(&local[28], 2), left = e.compressed;
    if (at > a.size || left > a.size - at) return e.name;
    a.in.seekg(static_cast<std::streamoff>(at));
    uLong crc = crc32(0L, Z_NULL, 0);
    while (left > 0) {
      const auto n = static_cast<std::streamsize>(std::min<uint64_t>(left, buffer.size()));
      a.in.read(buffer.data(), n);
      if (a.in.gcount() != n) return e.name;
      crc = crc32(crc, reinterpret_cast<const Bytef*>(buffer.data()), static_cast<uInt>(n));
      left -= static_cast<uint64_t>(n);
    }
    if (crc != e.crc && e.crc != 0) return e.name;
  }
  return "";
}

}  // namespace poslab
