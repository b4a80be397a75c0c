// Do two tables have the same geometry? Comparisons that do not change when either table is rotated (or
// reflected) in its embedding space and rescaled: a learned table is defined only up to such a transform, so two
// seeds' tables compared entry by entry say nothing.
//
// Notation: A (P, d_A), B (P, d_B) are tables of the same rows (positions), of any widths; A_c, B_c their
// column-centred copies; Â = A_c / ‖A_c‖_F, B̂ likewise. docs/analysis.md, "Seed agreement", writes every formula out.
// Each measure comes with a null that fits structured tables: the same measure against B with its rows shuffled
// (mean ± sd over the copies): what the two geometries give when B's rows carry no position.
#pragma once

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace poslab {

// A measure's value over row-shuffled copies of B.
struct ShuffledNull {
  double mean = 0, sd = 0;
};

struct Agreement {
  std::string a_source, b_source;
  int64_t positions = 0, dims = 0, dims_b = 0;  // dims: A's width
  // Linear CKA: ‖B_cᵀ A_c‖_F² / (‖A_cᵀ A_c‖_F ‖B_cᵀ B_c‖_F) ∈ [0, 1]; 1 when B_c = s A_c Q (Q orthogonal).
  double cka = 0;
  // What two independent Gaussian tables of these shapes give on average: √(d_A d_B / ((m + d_A + 1)(m + d_B + 1))),
  // m = P − 1 (d / (m + d + 1) for one width). No null for structured tables: see the shuffled ones below.
  double cka_random = 0;
  // Orthogonal Procrustes with scale: min over orthogonal R and s of ‖s Â R − B̂‖_F = √(1 − (Σ σ_i(Âᵀ B̂))²) ∈ [0, 1];
  // 0 for a rotated, rescaled copy. (scipy.spatial.procrustes' disparity is its square.) Tables of different widths
  // are compared with the narrower one padded with zero columns, which leaves the σ_i of Âᵀ B̂ as they are.
  double procrustes_residual = 0;
  // Pearson correlation of the off-diagonal entries of the two (P, P) cosine-similarity matrices.
  double similarity_correlation = 0;
  // Principal angles between the top-k left singular subspaces of A_c and B_c (subspaces of the P positions, the
  // same space for both tables), in degrees, ascending. k is the smaller signal rank of the two tables (the
  // components above their noise floors) unless given; none when a table has no component above its floor.
  int k = 0;
  bool k_given = false;
  int signal_rank_a = 0, signal_rank_b = 0;
  std::vector<double> principal_angles;
  double mean_cos2 = 0;         // mean cos² of the angles; k / (P − 1) for independent random subspaces
  double mean_cos2_random = 0;  // that expectation
  // The nulls: B's rows shuffled, `shuffles` copies (seeded, the same every run).
  int shuffles = 0;
  ShuffledNull cka_shuffled, procrustes_shuffled, similarity_shuffled, mean_cos2_shuffled;
};

// Compares two float tables of the same rows (any widths, any float dtype). k = 0 takes it from the signal ranks.
// Throws poslab::Error naming both sources and shapes when the rows differ, or when a table is constant.
Agreement table_agreement(const torch::Tensor& A, const torch::Tensor& B, const std::string& a_source,
                          const std::string& b_source, int k = 0, int shuffles = 20, uint64_t seed = 1234);

nlohmann::json to_json(const Agreement& g);
// A few lines for the terminal: each number beside what random tables of the shape would give.
std::string agreement_text(const Agreement& g);

// Pieces, exposed for tests (A, B float64 (P, d), centred where it says so).
double linear_cka(const torch::Tensor& A_c, const torch::Tensor& B_c);
double procrustes_residual(const torch::Tensor& A_c, const torch::Tensor& B_c);
std::vector<double> principal_angles_degrees(const torch::Tensor& U, const torch::Tensor& V);  // orthonormal columns
double expected_random_cka(int64_t P, int64_t d_a, int64_t d_b);

}  // namespace poslab
