#include "formats/safetensors.h"

#include <nlohmann/json.hpp>

#include <cstring>

#include "util/error.h"
#include "util/json_text.h"
#include "util/near_words.h"

namespace poslab {

namespace {

const char* kHint = "pass a .safetensors file (as written by the safetensors library)";

SafetensorsEntry parse_entry(const nlohmann::json& info, const std::string& name, size_t data_start, size_t file_size,
                             const std::string& path) {
  const size_t data_size = file_size - data_start;
  SafetensorsEntry e;
  try {
    e.dtype = info.at("dtype").get<std::string>();
    e.shape = info.at("shape").get<std::vector<int64_t>>();
    const auto offsets = info.at("data_offsets").get<std::vector<uint64_t>>();
    if (e.dtype == "F32")
      e.element_size = 4;
    else if (e.dtype == "F16" || e.dtype == "BF16")
      e.element_size = 2;
    else if (e.dtype == "F64" || e.dtype == "I64")
      e.element_size = 8;
    else
      throw Error(
          path + ": tensor '" + name + "' has dtype " + e.dtype + "; supported: F32, F16, BF16, F64, I64",
          "convert the tensor to one of those (e.g. with safetensors' Python API) or name another with --tensor");
    if (offsets.size() != 2 || offsets[1] < offsets[0] || offsets[1] > data_size)
      throw Error(path + ": tensor '" + name + "' lies outside the file (truncated?)", "download the file again");
    e.offset = data_start + offsets[0];
    e.bytes = offsets[1] - offsets[0];
    // numel * element_size must equal the bytes, computed without overflow.
    size_t numel = 1;
    for (int64_t s : e.shape) {
      if (s < 0) throw Error(path + ": tensor '" + name + "' has a negative dimension", kHint);
      if (s != 0 && numel > e.bytes / static_cast<size_t>(s)) {
        numel = e.bytes + 1;  // more elements than bytes: cannot match
        break;
      }
      numel *= static_cast<size_t>(s);
    }
    if (numel > e.bytes || numel * e.element_size != e.bytes)
      throw Error(path + ": tensor '" + name + "' holds " + std::to_string(e.bytes) + " bytes, its shape needs " +
                      (numel > e.bytes ? std::string("more") : std::to_string(numel * e.element_size)),
                  kHint);
  } catch (const nlohmann::json::exception& ex) {
    throw Error(path + ": malformed entry for tensor '" + name + "': " + ex.what(), kHint);
  }
  return e;
}

nlohmann::json parse_header_json(const std::string& header, const std::string& path) {
  auto j = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw Error(path + ": the safetensors header is not a JSON object", kHint);
  return j;
}

}  // namespace

uint64_t safetensors_header_length(const std::string& first8, size_t file_size, const std::string& path) {
  if (first8.size() < 8 || file_size < 8)
    throw Error(path + ": truncated safetensors file (" + std::to_string(file_size) + " bytes)", kHint);
  uint64_t header_len = 0;
  std::memcpy(&header_len, first8.data(), 8);
  if (header_len > file_size - 8)
    throw Error(path + ": truncated safetensors file: the header claims " + std::to_string(header_len) + " bytes, " +
                    std::to_string(file_size - 8) + " follow",
                kHint);
  return header_len;
}

std::map<std::string, SafetensorsEntry> parse_safetensors_header(const std::string& header, size_t file_size,
                                                                 const std::string& path) {
  const size_t data_start = 8 + header.size();
  if (data_start > file_size) throw Error(path + ": truncated safetensors file", kHint);
  const nlohmann::json j = parse_header_json(header, path);
  std::map<std::string, SafetensorsEntry> out;
  for (const auto& [name, info] : j.items())
    if (name != "__metadata__") out[name] = parse_entry(info, name, data_start, file_size, path);
  return out;
}

std::map<std::string, SafetensorsEntry> list_safetensors_entries(const std::string& bytes, const std::string& path) {
  const uint64_t n = safetensors_header_length(bytes.substr(0, 8), bytes.size(), path);
  return parse_safetensors_header(bytes.substr(8, n), bytes.size(), path);
}

SafetensorsEntry find_safetensors_entry(const std::string& bytes, const std::string& name, const std::string& path) {
  const uint64_t n = safetensors_header_length(bytes.substr(0, 8), bytes.size(), path);
  const nlohmann::json header = parse_header_json(bytes.substr(8, n), path);
  if (name == "__metadata__" || !header.contains(name)) {
    std::vector<std::string> names;
    for (const auto& [key, value] : header.items())
      if (key != "__metadata__") names.push_back(key);
    const MissedName missed = missed_name(name, names, "pass one of its names with --tensor");
    throw Error(path + ": no tensor named '" + name + "'; the file holds " + missed.names, missed.hint);
  }
  return parse_entry(header[name], name, 8 + n, bytes.size(), path);
}

std::string safetensors_file(const std::vector<SafetensorsTensor>& tensors,
                             const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const SafetensorsTensor& t : tensors) {
    const size_t element = t.dtype == "F32" ? 4 : t.dtype == "F16" || t.dtype == "BF16" ? 2 : 8;
    size_t numel = 1;
    for (int64_t d : t.shape) numel *= static_cast<size_t>(d);
    if (numel * element != t.bytes.size())
      throw Error("safetensors: tensor '" + t.name + "' has " + std::to_string(t.bytes.size()) +
                      " bytes, its shape and " + t.dtype + " need " + std::to_string(numel * element),
                  "write each tensor with as many bytes as its shape and dtype take");
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string h = json_text(header);
  h.append((8 - h.size() % 8) % 8, ' ');  // the data starts on an 8-byte boundary
  const uint64_t n = h.size();
  std::string out(reinterpret_cast<const char*>(&n), 8);
  out.reserve(8 + h.size() + offset);
  out += h;
  for (const SafetensorsTensor& t : tensors) out += t.bytes;
  return out;
}

}  // namespace poslab
