// Small products of bfloat16 matrices with float sums, for the per-head products of the fused attention kernel
// (no LibTorch). Operands are bf16 *pairs*: a uint32_t holds two bf16 values that are consecutive along the
// summed dimension (low half first), the layout of AVX512-BF16's VDPBF16PS, which multiplies 16 pairs by 16 pairs
// and adds both products to 16 float sums in one instruction.
#pragma once

#include <cstdint>

namespace poslab {

// How the pair products run: VDPBF16PS (AVX512-BF16 CPUs: Zen 4, Cooper Lake, Sapphire Rapids and later), or the
// same arithmetic in plain C++ (any CPU; what tests force to check the instruction against). Both add the high
// pair's product first, then the low one's, rounding each sum to float (the instruction's documented order).
enum class Bf16Dot { kNative, kEmulated };
// A pair, readable in place from bf16 storage (may alias uint16_t).
typedef uint32_t __attribute__((__may_alias__)) bf16_pair;
bool cpu_has_bf16_dot();
// kNative where the CPU has the instruction, else kEmulated; set_bf16_dot forces one (tests; kNative on a CPU
// without it throws std::invalid_argument).
Bf16Dot bf16_dot();
void set_bf16_dot(Bf16Dot d);

// C (m x n floats, row stride ldc) = the sum over pairs p in [p0, p1) of A(i, p) . B(p, j), where
// A(i, p) = a[i * a_row + p * a_pair] and B(p, j) = b[p * ldb + j]. n must be a multiple of 16; C is overwritten.
void bf16_gemm(int64_t m, int64_t n, int64_t p0, int64_t p1, const bf16_pair* a, int64_t a_row, int64_t a_pair,
               const bf16_pair* b, int64_t ldb, float* c, int64_t ldc);

// Packing bf16 matrices (rows of `cols` values, row stride ld, in bf16 elements) into pairs:
// pairs of rows: out[p * ldo + j] = (x[2p][j], x[2p + 1][j]) for p < ceil(rows / 2), j < cols (a missing last row
// is 0); the B operand of X's product from the left (X summed over its rows), or the A operand of X^T (a_row 1,
// a_pair ldo).
void pack_row_pairs(const uint16_t* x, int64_t ld, int64_t rows, int64_t cols, bf16_pair* out, int64_t ldo);
// pairs of columns, transposed: out[p * ldo + j] = (x[j][2p], x[j][2p + 1]) for j < rows, p < cols / 2 (cols
// even): the B operand of X^T (X summed over its columns).
void pack_col_pairs_t(const uint16_t* x, int64_t ld, int64_t rows, int64_t cols, bf16_pair* out, int64_t ldo);

}  // namespace poslab
