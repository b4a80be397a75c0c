// GELU over bfloat16 arrays (no LibTorch: vectorised loops), computed in float and rounded once. Without a bias
// the input has only 2^16 values: gelu_bf16 and gelu_backward_bf16 look up tables of the float formulas, built on
// first use (~1 ms, 384 KB).
#pragma once

#include <cstdint>

namespace poslab {

// y = x * Phi(x), Phi the standard normal CDF (the exact, erf form of torch::gelu), for n elements.
void gelu_bf16(const uint16_t* x, uint16_t* y, int64_t n);
// dx = dy * (Phi(x) + x * phi(x)), phi the standard normal density.
void gelu_backward_bf16(const uint16_t* x, const uint16_t* dy, uint16_t* dx, int64_t n);

// The same with a float bias folded in, over rows [begin, end) of C columns: y = gelu(x + b) rounded once;
// backward dx = dy * gelu'(x + b) rounded once, and db[c] += the float dx summed over the rows.
void bias_gelu_rows_bf16(const uint16_t* x, const float* b, uint16_t* y, int64_t begin, int64_t end, int64_t C);
void bias_gelu_backward_rows_bf16(const uint16_t* x, const float* b, const uint16_t* dy, uint16_t* dx, float* db,
                                  int64_t begin, int64_t end, int64_t C);

// erf(x) for any float x, absolute error < 5e-7: Abramowitz & Stegun 7.1.26 (1.5e-7) plus float rounding.
float erf_approx(float x);

}  // namespace poslab
