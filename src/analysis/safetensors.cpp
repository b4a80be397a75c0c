#include "analysis/safetensors.h"

#include <nlohmann/json.hpp>

#include <cstring>

#include "util/error.h"

namespace poslab {

SafetensorsEntry find_safetensors_entry(const std::string& bytes, const std::string& name, const std::string& path) {
  const std::string hint = "pass a .safetensors file (as written by the safetensors library)";
  uint64_t header_len = 0;
  if (bytes.size() < 8) throw Error(path + ": truncated safetensors file (" + std::to_string(bytes.size()) + " bytes)", hint);
  std::memcpy(&header_len, bytes.data(), 8);
  if (header_len > bytes.size() - 8)
    throw Error(path + ": truncated safetensors file: the header claims " + std::to_string(header_len) + " bytes, " +
                    std::to_string(bytes.size() - 8) + " follow",
                hint);
  const auto header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(header_len),
                                            nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) throw Error(path + ": the safetensors header is not a JSON object", hint);
  if (!header.contains(name)) {
    std::string names;
    for (const auto& [key, value] : header.items())
      if (key != "__metadata__") names += (names.empty() ? "" : ", ") + key;
    throw Error(path + ": no tensor named '" + name + "'; the file holds: " + (names.empty() ? "(none)" : names),
                "pass one of these names with --tensor");
  }
  const auto& info = header[name];
  const size_t data_start = 8 + header_len;
  const size_t data_size = bytes.size() - data_start;
  SafetensorsEntry e;
  try {
    e.dtype = info.at("dtype").get<std::string>();
    e.shape = info.at("shape").get<std::vector<int64_t>>();
    const auto offsets = info.at("data_offsets").get<std::vector<uint64_t>>();
    if (e.dtype == "F32") e.element_size = 4;
    else if (e.dtype == "F16" || e.dtype == "BF16") e.element_size = 2;
    else if (e.dtype == "F64" || e.dtype == "I64") e.element_size = 8;
    else throw Error(path + ": tensor '" + name + "' has dtype " + e.dtype + "; supported: F32, F16, BF16, F64, I64");
    if (offsets.size() != 2 || offsets[1] < offsets[0] || offsets[1] > data_size)
      throw Error(path + ": tensor '" + name + "' lies outside the file (truncated?)", "download the file again");
    e.offset = data_start + offsets[0];
    e.bytes = offsets[1] - offsets[0];
    // numel * element_size must equal the bytes, computed without overflow.
    size_t numel = 1;
    for (int64_t s : e.shape) {
      if (s < 0) throw Error(path + ": tensor '" + name + "' has a negative dimension", hint);
      if (s != 0 && numel > e.bytes / static_cast<size_t>(s)) {
        numel = e.bytes + 1;  // more elements than bytes: cannot match
        break;
      }
      numel *= static_cast<size_t>(s);
    }
    if (numel > e.bytes || numel * e.element_size != e.bytes)
      throw Error(path + ": tensor '" + name + "' holds " + std::to_string(e.bytes) + " bytes, its shape needs " +
                      (numel > e.bytes ? std::string("more") : std::to_string(numel * e.element_size)),
                  hint);
  } catch (const nlohmann::json::exception& ex) {
    throw Error(path + ": malformed entry for tensor '" + name + "': " + ex.what(), hint);
  }
  return e;
}

}  // namespace poslab
