#include "ops/cross_entropy_kernel.h"

#include <cmath>
#include <vector>

#include "util/simd_math.h"

namespace poslab {
namespace {

using simd::exp_np;

// One row in float: returns the loss and leaves exp(x - max) / sum * scale in `e` when want_grad.
POSLAB_SIMD_TARGETS float row_loss(const float* x, int64_t V, int64_t target, float* e, float grad_scale,
                                   bool want_grad) {
  float m = x[0];
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < V; ++j) m = x[j] > m ? x[j] : m;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < V; ++j) {
    e[j] = exp_np(x[j] - m);
    sum += e[j];
  }
  if (want_grad) {
    const float k = grad_scale / sum;
#pragma omp simd
    for (int64_t j = 0; j < V; ++j) e[j] *= k;
    e[target] -= grad_scale;
  }
  return m + std::log(sum) - x[target];
}

}  // namespace

float exp_nonpositive(float x) { return exp_np(x); }

void cross_entropy_rows(const float* logits, const int64_t* targets, int64_t begin, int64_t end, int64_t V,
                        float* losses, float* grad, float grad_scale) {
  thread_local std::vector<float> scratch;
  if (grad == nullptr) scratch.resize(static_cast<size_t>(V));
  for (int64_t i = begin; i < end; ++i) {
    float* e = grad != nullptr ? grad + i * V : scratch.data();
    losses[i] = row_loss(logits + i * V, V, targets[i], e, grad_scale, grad != nullptr);
  }
}

void cross_entropy_rows_bf16(const uint16_t* logits, const int64_t* targets, int64_t begin, int64_t end, int64_t V,
                             float* losses, uint16_t* grad, float grad_scale) {
  thread_local std::vector<float> row, e;
  row.resize(static_cast<size_t>(V));
  e.resize(static_cast<size_t>(V));
  for (int64_t i = begin; i < end; ++i) {
    simd::widen_bf16(logits + i * V, row.data(), V);
    losses[i] = row_loss(row.data(), V, targets[i], e.data(), grad_scale, grad != nullptr);
    if (grad != nullptr) simd::narrow_bf16(e.data(), grad + i * V, V);
  }
}

}  // namespace poslab
