// The analysis's building blocks, one concern per file (spectrum.cpp, similarity.cpp, sinusoid.cpp,
// interpolation.cpp).
// All take float64 CPU tensors; W is (P, d).
#pragma once

#include "analysis/analysis.h"

namespace poslab::metrics {

// Fills singular values, explained variance, k50..k99, k90_uncentered and the effective dimensionalities.
// Returns V_c (d, r): the right singular vectors of W_c (principal directions), for sinusoid().
torch::Tensor spectrum(const torch::Tensor& W, Analysis& out);

// Fills adjacent_cosines, cos_by_offset, half_offset, smooth, shuffled, translation_invariance, monotonicity and
// their shuffled twins (and cosine_matrix when asked).
void similarity(const torch::Tensor& W, const AnalysisOptions& opt, Analysis& out);

// Fills row_norms and boundary (needs adjacent_cosines).
void boundary(const torch::Tensor& W, const AnalysisOptions& opt, Analysis& out);
// Fills heavy_rows (needs row_offset).
void heavy_rows(const torch::Tensor& W, Analysis& out);

// Fills pc_frequencies, circles, helix, periodogram (needs explained_variance and noise), sinusoid_r2 and
// sinusoid_r2_strongest.
void sinusoid(const torch::Tensor& W, const torch::Tensor& principal_dirs, const AnalysisOptions& opt, Analysis& out);

// Fills reconstruction, probe and shuffled_probe.
void interpolation(const torch::Tensor& W, const AnalysisOptions& opt, Analysis& out);

std::vector<double> to_vector(const torch::Tensor& t);

// W less its mean row, the mean taken about the first row: a table whose rows are all one row centres to exactly zero
// (a mean of 64 copies of 0.7, no binary fraction, is not 0.7 itself, and its rounding would read as variance), and
// rows that share a large common part lose it before the mean's rounding can count.
torch::Tensor centred(const torch::Tensor& W);  // (P, d) -> (P, d)

}  // namespace poslab::metrics
