// The inner loops of fused causal self-attention for one (sequence, head), on raw float rows (no LibTorch).
// Matrices are row-major with a row stride ("ld"), so that q, k, v and their gradients can be read and written
// in place inside the (T, 3C) rows of the c_attn output.
#pragma once

#include <cstdint>

namespace poslab {

// Row-major C (m x n, row stride ldc) = op(A) op(B) (+ C when accumulate), op(X) = X or X^T; A is m x k after op,
// B is k x n after op. The float BLAS's sgemm (OpenBLAS, or MKL inside PyTorch's LibTorch); a plain loop when the
// process has none.
void gemm_rows(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
               int64_t ldb, float* c, int64_t ldc, bool accumulate = false);
// That plain loop (gemm_rows without a BLAS), the same arguments.
void gemm_rows_loop(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                    const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate = false);

// Forward of one head: p (T x T, row stride T) = causal softmax of scale * q k^T (0 above the diagonal), and
// o (T x hs) = p v. q, k, v: T x hs with row stride ld_in; o has row stride ld_out. scores: T x T scratch.
// Query rows go in blocks of kAttentionBlock: the block ending at row r multiplies only keys 0 .. r - 1.
void attention_head_forward(const float* q, const float* k, const float* v, int64_t ld_in, int64_t T, int64_t hs,
                            float scale, float* scores, float* p, float* o, int64_t ld_out);

// Backward of one head, given p from the forward and do (T x hs, row stride ld_do): dq, dk, dv (T x hs, row stride
// ld_grad). scratch: T x T.
void attention_head_backward(const float* q, const float* k, const float* v, int64_t ld_in, const float* p,
                             const float* d_o, int64_t ld_do, int64_t T, int64_t hs, float scale, float* scratch,
                             float* dq, float* dk, float* dv, int64_t ld_grad);

inline constexpr int64_t kAttentionBlock = 64;

// The same in bfloat16 (q, k, v, o, do and the gradients as bf16 bit patterns), the products as bf16 pair products
// with float sums (ops/bf16_gemm.h); the softmax and its gradient in float, rounded to bf16 for the products that
// read them (as LibTorch's bf16 path rounds them). Needs T a multiple of 16 and hs even
// (attention_bf16_fits). Query rows go in blocks of 16: the block ending at row r multiplies only keys 0 .. r - 1
// (rounded up to 16).
bool attention_bf16_fits(int64_t T, int64_t hs);
void attention_head_forward_bf16(const uint16_t* q, const uint16_t* k, const uint16_t* v, int64_t ld_in, int64_t T,
                                 int64_t hs, float scale, float* p, uint16_t* o, int64_t ld_out);
void attention_head_backward_bf16(const uint16_t* q, const uint16_t* k, const uint16_t* v, int64_t ld_in,
                                  const float* p, const uint16_t* d_o, int64_t ld_do, int64_t T, int64_t hs,
                                  float scale, uint16_t* dq, uint16_t* dk, uint16_t* dv, int64_t ld_grad);

}  // namespace poslab
