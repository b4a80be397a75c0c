// The inner loops of the causal softmax of attention scores, on raw rows (no LibTorch: vectorised loops).
#pragma once

#include <cstdint>

namespace poslab {

// Rows [begin, end) of (BH, T, T) scores, row r being query position i = r % T: out[j] = softmax over k <= i of
// scale * s[k], evaluated at j <= i, and 0 for j > i (keys after the query are never read).
void causal_softmax_rows(const float* s, float* out, int64_t begin, int64_t end, int64_t T, float scale);
void causal_softmax_rows_bf16(const uint16_t* s, uint16_t* out, int64_t begin, int64_t end, int64_t T, float scale);

// Its gradient: ds[j] = scale * p[j] * (dp[j] - sum_{k <= i} dp[k] p[k]) for j <= i, 0 for j > i.
void causal_softmax_backward_rows(const float* p, const float* dp, float* ds, int64_t begin, int64_t end, int64_t T,
                                  float scale);
void causal_softmax_backward_rows_bf16(const uint16_t* p, const uint16_t* dp, uint16_t* ds, int64_t begin, int64_t end,
                                       int64_t T, float scale);

}  // namespace poslab
