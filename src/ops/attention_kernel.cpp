#include "ops/attention_kernel.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

#include "ops/causal_softmax_kernel.h"

namespace poslab {
namespace {

// Fortran BLAS sgemm, column-major. LibTorch carries one in every build poslab supports (Debian's links
// libblas.so.3, PyTorch's exports MKL's), so it is looked up in the process rather than linked.
using SgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                         const int*, const float*, const int*, const float*, float*, const int*);

SgemmFn find_sgemm() { return reinterpret_cast<SgemmFn>(dlsym(RTLD_DEFAULT, "sgemm_")); }

void loop_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
               int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  for (int64_t i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
    if (!accumulate) std::fill(ci, ci + n, 0.0f);
    for (int64_t p = 0; p < k; ++p) {
      const float aip = ta ? a[p * lda + i] : a[i * lda + p];
      for (int64_t j = 0; j < n; ++j) ci[j] += aip * (tb ? b[j * ldb + p] : b[p * ldb + j]);
    }
  }
}

}  // namespace

void gemm_rows(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  static const SgemmFn sgemm = find_sgemm();
  if (m == 0 || n == 0) return;
  if (sgemm == nullptr) {
    loop_gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
    return;
  }
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the same call with the operands swapped.
  const char ta = trans_a ? 'T' : 'N', tb = trans_b ? 'T' : 'N';
  const int M = static_cast<int>(n), N = static_cast<int>(m), K = static_cast<int>(k);
  const int LDA = static_cast<int>(ldb), LDB = static_cast<int>(lda), LDC = static_cast<int>(ldc);
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  sgemm(&tb, &ta, &M, &N, &K, &one, b, &LDA, a, &LDB, &beta, c, &LDC);
}

void attention_head_forward(const float* q, const float* k, const float* v, int64_t ld_in, int64_t T, int64_t hs,
                            float scale, float* scores, float* p, float* o, int64_t ld_out) {
  for (int64_t r0 = 0; r0 < T; r0 += kAttentionBlock) {
    const int64_t r1 = std::min(T, r0 + kAttentionBlock);
    gemm_rows(false, true, r1 - r0, r1, hs, q + r0 * ld_in, ld_in, k, ld_in, scores + r0 * T, T);  // q k^T
  }
  causal_softmax_rows(scores, p, 0, T, T, scale);  // reads row i up to key i only
  for (int64_t r0 = 0; r0 < T; r0 += kAttentionBlock) {
    const int64_t r1 = std::min(T, r0 + kAttentionBlock);
    gemm_rows(false, false, r1 - r0, hs, r1, p + r0 * T, T, v, ld_in, o + r0 * ld_out, ld_out);  // p v
  }
}

void attention_head_backward(const float* q, const float* k, const float* v, int64_t ld_in, const float* p,
                             const float* d_o, int64_t ld_do, int64_t T, int64_t hs, float scale, float* scratch,
                             float* dq, float* dk, float* dv, int64_t ld_grad) {
  // dp = do v^T on and below the diagonal; the softmax backward reads whole vectors past the last key (where p
  // is 0), so the rest must be finite: zeros.
  std::memset(scratch, 0, static_cast<size_t>(T * T) * sizeof(float));
  for (int64_t r0 = 0; r0 < T; r0 += kAttentionBlock) {
    const int64_t r1 = std::min(T, r0 + kAttentionBlock);
    gemm_rows(false, true, r1 - r0, r1, hs, d_o + r0 * ld_do, ld_do, v, ld_in, scratch + r0 * T, T);
  }
  causal_softmax_backward_rows(p, scratch, scratch, 0, T, T, scale);  // ds, in place (scale included)
  const float* ds = scratch;
  for (int64_t r0 = 0; r0 < T; r0 += kAttentionBlock) {
    const int64_t r1 = std::min(T, r0 + kAttentionBlock);
    gemm_rows(false, false, r1 - r0, hs, r1, ds + r0 * T, T, k, ld_in, dq + r0 * ld_grad, ld_grad);  // ds k
  }
  for (int64_t c0 = 0; c0 < T; c0 += kAttentionBlock) {  // key block c0..c1 is seen by queries c0..T-1
    const int64_t c1 = std::min(T, c0 + kAttentionBlock);
    gemm_rows(true, false, c1 - c0, hs, T - c0, ds + c0 * T + c0, T, q + c0 * ld_in, ld_in, dk + c0 * ld_grad,
              ld_grad);  // ds^T q
    gemm_rows(true, false, c1 - c0, hs, T - c0, p + c0 * T + c0, T, d_o + c0 * ld_do, ld_do, dv + c0 * ld_grad,
              ld_grad);  // p^T do
  }
}

}  // namespace poslab
