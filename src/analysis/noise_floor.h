// The noise floor of a table's spectrum: how many principal components stand above what i.i.d. noise of the
// same shape would give, by the optimal hard threshold of Gavish & Donoho (2014), "The optimal hard threshold for
// singular values is 4/√3", IEEE Trans. Inf. Theory 60(8), for noise of unknown level. Torch-free.
//
// Notation: the centred table W_c is (P − 1) × d in effect (centring removes one dimension of the rows), so
// m = min(P − 1, d) singular values σ_1 ≥ … ≥ σ_m are used, n = max(P − 1, d), β = m / n ∈ (0, 1].
//
// The noise level: their estimate median(σ) / √(n·μ_β) reads the median as the noise bulk's. A long table whose
// signal fills every column (the sinusoidal table at 1,024 × 64) has no bulk, and its median is a signal's: the
// estimate lands inside the signal's spectrum. Noise also puts the smallest singular value near the bulk's lower
// edge, σ_m ≈ √n·(1 − √β)·σ, so the level is taken as the smaller of the median's estimate and the smallest's bound
// 2σ_m / (√n·(1 − √β)), where that edge stands clear of 0 (β ≤ 1/4) over enough values (m ≥ 8). For noise the
// bound is about twice the median's estimate, and over thousands of Gaussian tables of those shapes it never
// decided; for a table with no bulk it is the one that decides, and errs towards fewer components (≤ 2× the noise).
#pragma once

#include <cstdint>
#include <vector>

namespace poslab {

struct NoiseFloor {
  double beta = 0;       // m / n
  double omega = 0;      // ω(β) = λ*(β) / √μ_β
  double threshold = 0;  // τ = max(λ*(β) · √n · noise_sigma, kRoundingFloor · σ_1): components with σ_k > τ are
                         // signal; ω(β) · median(σ) where the median decides
  double noise_sigma = 0;     // the noise's estimated per-entry sd: min(median(σ) / √(n · μ_β), smallest_bound)
  double smallest_bound = 0;  // 2 σ_m / (√n (1 − √β)) where β ≤ 1/4 and m ≥ 8, else +∞
  bool smallest_decides = false;  // noise_sigma is smallest_bound: the median σ is a signal's, not the noise bulk's
  bool rounding_floor = false;    // τ is kRoundingFloor · σ_1: the noise estimate is below it (no noise at all)
  int signal_rank = 0;            // #{k : σ_k > τ}
  double signal_share = 0;        // Σ_{k ≤ signal_rank} σ_k² / Σ_k σ_k² (0 for a zero table)
};

// A table without noise (a formula's, a planted signal's) has no noise bulk: its median singular value is float32's
// rounding of the table (~1e-8 of σ_1), and the threshold would count rounding as signal. τ is at least this share
// of σ_1, 100× that rounding; a component below it holds under 1e-12 of the variance.
constexpr double kRoundingFloor = 1e-6;

// μ_β: the median of the Marchenko–Pastur law with aspect ratio β ∈ (0, 1] (eigenvalues of X Xᵀ / n for an
// m × n matrix X of unit-variance i.i.d. entries), by quadrature and bisection (|error| < 1e-9).
double marchenko_pastur_median(double beta);

// λ*(β) = √(2(β + 1) + 8β / (β + 1 + √(β² + 14β + 1))): the threshold, in units of √n · σ, for known noise.
double optimal_threshold_known_noise(double beta);

// Where the smallest singular value bounds the noise level (see above): β ≤ this, m ≥ kSmallestBoundMinValues.
constexpr double kSmallestBoundMaxBeta = 0.25;
constexpr int64_t kSmallestBoundMinValues = 8;

// ω(β) = λ*(β) / √μ_β; Gavish & Donoho's fit 0.56β³ − 0.95β² + 1.82β + 1.43 is within 0.02 of it.
double optimal_threshold_coefficient(double beta);

// The noise floor of a centred table's singular values (descending; only the first m = min(P − 1, d) are read).
// P >= 2, d >= 1.
NoiseFloor noise_floor(const std::vector<double>& singular_values_centered, int64_t P, int64_t d);

}  // namespace poslab
