// The inner loops of the fused clip + AdamW update, on raw float arrays (no LibTorch: vectorised loops, one
// clone per instruction set chosen at run time).
#pragma once

#include <cstdint>

namespace poslab {

// Sum of squares of x[0..n), accumulated in double.
double sum_of_squares(const float* x, int64_t n);

// LibTorch 1.13's AdamW::step for one parameter, element by element, with the gradient scaled first (clipping):
//   g = grad * grad_scale
//   p = p * decay                                  (decay = 1 - lr * weight_decay)
//   m = m * beta1 + g * (1 - beta1)
//   v = v * beta2 + g * g * (1 - beta2)
//   p = p - step_size * (m / (sqrt(v) / sqrt_bc2 + eps))   (step_size = lr / (1 - beta1^t), sqrt_bc2 = sqrt(1 -
//   beta2^t))
struct AdamWScalars {
  float grad_scale, decay, beta1, beta2, step_size, sqrt_bc2, eps;
};
void adamw_update(float* p, const float* grad, float* m, float* v, int64_t n, const AdamWScalars& s);

}  // namespace poslab
