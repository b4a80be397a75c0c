// Writing .safetensors files in tests: u64 header length, JSON header, data.
#pragma once

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <string>
#include <tuple>
#include <vector>

namespace poslab::test {

// tensors: (name, dtype, shape, raw little-endian bytes).
inline std::string safetensors(
    const std::vector<std::tuple<std::string, std::string, std::vector<int64_t>, std::string>>& tensors) {
  nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
  std::string data;
  for (const auto& [name, dtype, shape, bytes] : tensors) {
    header[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {data.size(), data.size() + bytes.size()}}};
    data += bytes;
  }
  const std::string h = header.dump();
  const uint64_t n = h.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + h + data;
}

// The bytes of a tensor of element type T, C order.
template <typename T>
std::string raw(const torch::Tensor& t) {
  auto c = t.contiguous();
  return std::string(reinterpret_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel()) * sizeof(T));
}

}  // namespace poslab::test
