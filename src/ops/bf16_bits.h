// A bf16 CPU tensor's data as the raw 16-bit patterns the vectorised kernels read and write (util/simd_math.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace poslab {

inline const uint16_t* bf16_bits(const at::Tensor& t) {
  return reinterpret_cast<const uint16_t*>(t.data_ptr<at::BFloat16>());
}
inline uint16_t* bf16_bits(at::Tensor& t) { return reinterpret_cast<uint16_t*>(t.data_ptr<at::BFloat16>()); }

}  // namespace poslab
