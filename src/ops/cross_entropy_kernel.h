// The inner loop of the fused softmax cross-entropy, on raw rows: no LibTorch here, so it compiles in a second
// and vectorises (float loops, a polynomial exp, one clone per instruction set chosen at run time).
#pragma once

#include <cstdint>

namespace poslab {

// For rows [begin, end) of a (rows, V) row-major table of logits:
//   losses[i] = logsumexp(row i) - row_i[targets[i]]
// and, when grad is not null, the gradient of sum_i losses[i] * grad_scale with respect to the logits:
//   grad row i = (softmax(row i) - onehot(targets[i])) * grad_scale.
// Targets must lie in [0, V). The bf16 variant reads and writes bfloat16 bit patterns (rounding to nearest
// even) and computes in float.
void cross_entropy_rows(const float* logits, const int64_t* targets, int64_t begin, int64_t end, int64_t V,
                        float* losses, float* grad, float grad_scale);
void cross_entropy_rows_bf16(const uint16_t* logits, const int64_t* targets, int64_t begin, int64_t end, int64_t V,
                             float* losses, uint16_t* grad, float grad_scale);

// exp(x) for x <= 0 (softmax after subtracting the row maximum), within 2 ulp of std::exp; 0 below -87.
float exp_nonpositive(float x);

}  // namespace poslab
