// How the similarity of two rows depends on their offset: translation invariance and monotonicity of a row-major
// (P, P) similarity matrix. Torch-free. The formulas are written out in docs/analysis.md ("What each metric means":
// `translation_invariance`, `monotonicity`).
#pragma once

#include <cstdint>
#include <vector>

namespace poslab {

// Translation invariance of a (P, P) similarity matrix C: the share of the variance of its off-diagonal entries
// (i < j) explained by the mean of each diagonal j − i. 1 for a Toeplitz matrix; about 2/P for noise.
double translation_invariance(const double* C, int64_t P, const std::vector<int64_t>* perm = nullptr);

// Monotonicity: over every triple i < j < k, the share of the two comparisons C[i][j] > C[i][k] (seen from i) and
// C[k][j] > C[k][i] (seen from k) that hold, ties counted half. 1 when similarity falls with distance from every
// row; 0.5 for noise. O(P² log P).
double monotonicity(const double* C, int64_t P, const std::vector<int64_t>* perm = nullptr);

// (perm: read C as the matrix of the rows reordered, row i of the copy being row perm[i] of the table.)

}  // namespace poslab
