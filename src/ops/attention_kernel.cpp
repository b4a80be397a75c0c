#include "ops/attention_kernel.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "ops/bf16_gemm.h"
#include "ops/causal_softmax_kernel.h"
#include "util/simd_math.h"

namespace poslab {
namespace {

// Fortran BLAS sgemm, column-major. LibTorch carries one in every build poslab supports (Debian's links
// libblas.so.3, PyTorch's exports MKL's), so it is looked up in the process rather than linked.
using SgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                         const int*, const float*, const int*, const float*, float*, const int*);

SgemmFn find_sgemm() { return reinterpret_cast<SgemmFn>(dlsym(RTLD_DEFAULT, "sgemm_")); }

}  // namespace

void gemm_rows_loop(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
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

void gemm_rows(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
               int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  static const SgemmFn sgemm = find_sgemm();
  if (m == 0 || n == 0) return;
  if (sgemm == nullptr) {
    gemm_rows_loop(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
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

namespace {

constexpr int64_t kBf16Rows = 16;  // query (or key) rows per block of the bf16 products

int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

// Per-thread scratch, reused from call to call (the sizes repeat).
template <typename T>
T* scratch(int which, int64_t n) {
  thread_local std::vector<T> bufs[6];
  if (static_cast<int64_t>(bufs[which].size()) < n) bufs[which].resize(static_cast<size_t>(n));
  return bufs[which].data();
}

const bf16_pair* pairs(const uint16_t* x) { return reinterpret_cast<const bf16_pair*>(x); }

// rows x cols floats (row stride ld) to bf16 (row stride ldo).
void narrow_rows(const float* x, int64_t ld, int64_t rows, int64_t cols, uint16_t* out, int64_t ldo) {
  for (int64_t i = 0; i < rows; ++i) simd::narrow_bf16(x + i * ld, out + i * ldo, cols);
}

// C (T x hsp) = A B over rows [0, T) in blocks; `pairs_of(i0, i1)` gives the pair range that rows i0 .. i1 - 1
// need; A(i, p) = a[i * a_row + p * a_pair]; then C's first hs columns are rounded into out (row stride ld_out).
template <typename PairRange>
void product_rows(int64_t T, int64_t hs, int64_t hsp, const bf16_pair* a, int64_t a_row, int64_t a_pair,
                  const bf16_pair* b, PairRange pairs_of, float* c, uint16_t* out, int64_t ld_out) {
  for (int64_t i0 = 0; i0 < T; i0 += kBf16Rows) {
    const int64_t i1 = std::min(T, i0 + kBf16Rows);
    const auto [p0, p1] = pairs_of(i0, i1);
    bf16_gemm(i1 - i0, hsp, p0, p1, a + i0 * a_row, a_row, a_pair, b, hsp, c + i0 * hsp, hsp);
  }
  narrow_rows(c, hsp, T, hs, out, ld_out);
}

}  // namespace

bool attention_bf16_fits(int64_t T, int64_t hs) { return T > 0 && T % 16 == 0 && hs > 0 && hs % 2 == 0; }

void attention_head_forward_bf16(const uint16_t* q, const uint16_t* k, const uint16_t* v, int64_t ld_in, int64_t T,
                                 int64_t hs, float scale, float* p, uint16_t* o, int64_t ld_out) {
  const int64_t hp = hs / 2, hsp = round16(hs);
  bf16_pair* kt = scratch<uint32_t>(0, hp * T);       // kt[c][j] = (k[j][2c], k[j][2c + 1])
  bf16_pair* vr = scratch<uint32_t>(1, T / 2 * hsp);  // vr[c][j] = (v[2c][j], v[2c + 1][j]), j < hsp
  float* scores = scratch<float>(2, T * T);
  uint16_t* pb = scratch<uint16_t>(3, T * T);  // p in bf16
  float* of = scratch<float>(4, T * hsp);
  pack_col_pairs_t(k, ld_in, T, hs, kt, T);
  if (hsp != hs) std::fill(vr, vr + T / 2 * hsp, 0u);
  pack_row_pairs(v, ld_in, T, hs, vr, hsp);
  for (int64_t i0 = 0; i0 < T; i0 += kBf16Rows) {  // q k^T, keys up to the block's last query
    const int64_t i1 = std::min(T, i0 + kBf16Rows);
    bf16_gemm(i1 - i0, round16(i1), 0, hp, pairs(q + i0 * ld_in), ld_in / 2, 1, kt, T, scores + i0 * T, T);
  }
  causal_softmax_rows(scores, p, 0, T, T, scale);
  narrow_rows(p, T, T, T, pb, T);
  const auto keys_to = [](int64_t, int64_t i1) { return std::pair<int64_t, int64_t>(0, (i1 + 1) / 2); };
  product_rows(T, hs, hsp, pairs(pb), T / 2, 1, vr, keys_to, of, o, ld_out);  // o = p v
}

void attention_head_backward_bf16(const uint16_t* q, const uint16_t* k, const uint16_t* v, int64_t ld_in,
                                  const float* p, const uint16_t* d_o, int64_t ld_do, int64_t T, int64_t hs,
                                  float scale, uint16_t* dq, uint16_t* dk, uint16_t* dv, int64_t ld_grad) {
  const int64_t hp = hs / 2, hsp = round16(hs), tp = T / 2;
  bf16_pair* vt = scratch<uint32_t>(0, hp * T);      // vt[c][j] = (v[j][2c], v[j][2c + 1])
  bf16_pair* rows = scratch<uint32_t>(1, tp * hsp);  // k, q, do in pairs of rows, in turn
  float* ds = scratch<float>(2, T * T);
  uint16_t* b16 = scratch<uint16_t>(3, T * T);  // ds, then p, in bf16
  float* g = scratch<float>(4, T * hsp);
  bf16_pair* cols = scratch<uint32_t>(5, tp * T);  // ds^T, then p^T, in pairs: [query pair][key]
  pack_col_pairs_t(v, ld_in, T, hs, vt, T);
  // dp = do v^T on and below the diagonal; the softmax backward reads whole vectors past the last key (where p is
  // 0), so the rest must be finite: zeros.
  std::memset(ds, 0, static_cast<size_t>(T * T) * sizeof(float));
  for (int64_t i0 = 0; i0 < T; i0 += kBf16Rows) {
    const int64_t i1 = std::min(T, i0 + kBf16Rows);
    bf16_gemm(i1 - i0, round16(i1), 0, hp, pairs(d_o + i0 * ld_do), ld_do / 2, 1, vt, T, ds + i0 * T, T);
  }
  causal_softmax_backward_rows(p, ds, ds, 0, T, T, scale);  // ds, in place (scale included)
  narrow_rows(ds, T, T, T, b16, T);
  if (hsp != hs) std::fill(rows, rows + tp * hsp, 0u);
  const auto keys_to = [](int64_t, int64_t i1) { return std::pair<int64_t, int64_t>(0, (i1 + 1) / 2); };
  const auto queries_from = [tp](int64_t i0, int64_t) { return std::pair<int64_t, int64_t>(i0 / 2, tp); };
  pack_row_pairs(k, ld_in, T, hs, rows, hsp);
  product_rows(T, hs, hsp, pairs(b16), tp, 1, rows, keys_to, g, dq, ld_grad);  // dq = ds k
  pack_row_pairs(b16, T, T, T, cols, T);
  pack_row_pairs(q, ld_in, T, hs, rows, hsp);
  product_rows(T, hs, hsp, cols, 1, T, rows, queries_from, g, dk, ld_grad);  // dk = ds^T q
  narrow_rows(p, T, T, T, b16, T);
  pack_row_pairs(b16, T, T, T, cols, T);
  pack_row_pairs(d_o, ld_do, T, hs, rows, hsp);
  product_rows(T, hs, hsp, cols, 1, T, rows, queries_from, g, dv, ld_grad);  // dv = p^T do
}

}  // namespace poslab
