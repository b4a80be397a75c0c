#include "formats/npy.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include "util/error.h"
#include "util/fs.h"

namespace poslab {

constexpr size_t kNpyHeadBytes = 1 << 20;  // what npy_shape reads: a header numpy writes is a few hundred bytes

std::string npy_bytes(const float* data, int64_t rows, int64_t cols) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                       std::to_string(cols) + "), }";
  const size_t preamble = 10;  // magic (6) + version (2) + header length (2)
  const size_t total = ((preamble + header.size() + 1 + 63) / 64) * 64;
  header.append(total - preamble - header.size() - 1, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  const uint16_t hlen = static_cast<uint16_t>(header.size());
  out.push_back(static_cast<char>(hlen & 0xFF));
  out.push_back(static_cast<char>(hlen >> 8));
  out += header;
  out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(rows * cols) * sizeof(float));
  return out;
}

NpyArray read_npy(const std::string& path) { return parse_npy(read_file(path), path); }

namespace {

// Where a .npy file's values are: its shape, the size of one value and the offset of the first.
struct NpyLayout {
  std::vector<int64_t> shape;
  size_t elem = 0;
  size_t data_offset = 0;
};

// Reads the header from `head` (the file's first bytes: all of them, or at least its header) and checks it against
// the file's `size`. Throws poslab::Error naming `path` for anything parse_npy refuses but its values.
NpyLayout parse_layout(const std::string& head, size_t size, const std::string& path) {
  const std::string hint = "pass a 2-D float32 or float64 array saved with numpy.save";
  if (head.size() < 10 || head.compare(0, 6, "\x93NUMPY") != 0)
    throw Error(path + ": not a .npy file (bad magic)", hint);
  const int major = static_cast<unsigned char>(head[6]);
  size_t hlen = 0, offset = 0;
  if (major == 1) {
    hlen = static_cast<unsigned char>(head[8]) | (static_cast<unsigned char>(head[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (head.size() < 12) throw Error(path + ": truncated .npy header", hint);
    uint32_t h = 0;
    std::memcpy(&h, head.data() + 8, 4);
    hlen = h;
    offset = 12;
  } else {
    throw Error(path + ": unsupported .npy version " + std::to_string(major), hint);
  }
  if (head.size() < offset + hlen) throw Error(path + ": truncated .npy header", hint);
  const std::string header = head.substr(offset, hlen);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']*)'")))
    throw Error(path + ": .npy header has no dtype", hint);
  const std::string descr = m[1];
  if (descr != "<f4" && descr != "<f8")
    throw Error(path + ": dtype " + descr + " is not supported (float32 '<f4' or float64 '<f8' only)",
                "convert it in numpy and save it again: numpy.save(PATH, numpy.load(PATH).astype('<f4'))");
  if (std::regex_search(header, std::regex("'fortran_order':\\s*True")))
    throw Error(path + ": Fortran-order arrays are not supported", "save with numpy.ascontiguousarray first");
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)")))
    throw Error(path + ": .npy header has no shape", hint);
  NpyLayout layout;
  const std::string dims = m[1];
  // The shape is a tuple of non-negative integers: "128, 64" or "128," (anything else is no .npy numpy writes).
  if (!std::regex_match(dims, std::regex("\\s*(\\d+\\s*,\\s*)*(\\d+\\s*,?\\s*)?")))
    throw Error(path + ": .npy shape (" + dims + ") is not a tuple of sizes", hint);
  const std::regex number("\\d+");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it) {
    if (it->str().size() > 12) throw Error(path + ": .npy shape " + dims + " is not a plausible size", hint);
    layout.shape.push_back(std::stoll(it->str()));
  }
  if (layout.shape.size() != 2)
    throw Error(path + ": array has " + std::to_string(layout.shape.size()) +
                    (layout.shape.size() == 1 ? " dimension" : " dimensions") + ", expected 2 (positions, dims)",
                hint);
  layout.elem = descr == "<f4" ? 4 : 8;
  layout.data_offset = offset + hlen;
  const size_t available = (size - layout.data_offset) / layout.elem;
  // Compare without overflow: rows * cols must equal the elements present.
  if (layout.shape[0] != 0 && static_cast<size_t>(layout.shape[1]) > available / static_cast<size_t>(layout.shape[0]))
    throw Error(path + ": truncated data: shape " + dims + " needs more than the " + std::to_string(available) +
                    " values present",
                "the file is damaged: save it again");
  const size_t n = static_cast<size_t>(layout.shape[0]) * static_cast<size_t>(layout.shape[1]);
  if (size - layout.data_offset != n * layout.elem)
    throw Error(path + ": truncated or oversized data: " + std::to_string(size - layout.data_offset) +
                    " bytes, expected " + std::to_string(n * layout.elem),
                "the file is damaged: save it again");
  return layout;
}

}  // namespace

NpyArray parse_npy(const std::string& bytes, const std::string& path) {
  const NpyLayout layout = parse_layout(bytes, bytes.size(), path);
  NpyArray arr;
  arr.shape = layout.shape;
  const size_t n = static_cast<size_t>(arr.shape[0]) * static_cast<size_t>(arr.shape[1]);
  arr.data.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (layout.elem == 4) {
      float f;
      std::memcpy(&f, bytes.data() + layout.data_offset + i * 4, 4);
      arr.data[i] = f;
    } else {
      std::memcpy(&arr.data[i], bytes.data() + layout.data_offset + i * 8, 8);
    }
  }
  return arr;
}

std::vector<int64_t> npy_shape(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(path + ": cannot be read: " + ec.message(), "put the file back, or name another");
  std::ifstream in(path, std::ios::binary);
  std::string head(static_cast<size_t>(std::min<uintmax_t>(size, kNpyHeadBytes)), '\0');
  if (!in.read(head.data(), static_cast<std::streamsize>(head.size())))
    throw Error(path + ": cannot be read", "check the file's permissions");
  return parse_layout(head, static_cast<size_t>(size), path).shape;
}

}  // namespace poslab
