// The inner loops of LayerNorm over rows of C floats (no LibTorch: vectorised loops). The output may be written
// as bfloat16, so that a bf16 matrix product after it reads it without a separate cast.
#pragma once

#include <cstdint>

namespace poslab {

// y = (x - mean) * rstd * w + b per row (b may be null); mean and rstd (1 / sqrt(var + eps), biased variance)
// are kept for the backward pass. Rows [begin, end).
void layer_norm_rows(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd, int64_t begin,
                     int64_t end, int64_t C, float eps);
void layer_norm_rows_bf16(const float* x, const float* w, const float* b, uint16_t* y, float* mean, float* rstd,
                          int64_t begin, int64_t end, int64_t C, float eps);

// Gradients for rows [begin, end): dx (overwritten); dw and db accumulated (db may be null). dy is float or bf16.
void layer_norm_backward_rows(const float* x, const float* w, const float* mean, const float* rstd, const float* dy,
                              float* dx, float* dw, float* db, int64_t begin, int64_t end, int64_t C);
void layer_norm_backward_rows_bf16(const float* x, const float* w, const float* mean, const float* rstd,
                                   const uint16_t* dy, float* dx, float* dw, float* db, int64_t begin, int64_t end,
                                   int64_t C);

}  // namespace poslab
