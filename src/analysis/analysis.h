// Analysis of a position table W: (P positions, d dims), any float dtype. Takes a plain tensor, never a model.
//
// Notation: w_i = row i of W, w̄ = mean row, W_c = W − w̄ (mean-centred), σ_k = singular values.
// Every formula is written out in docs/analysis.md.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/noise_floor.h"
#include "analysis/periodicity.h"
#include "util/memory.h"

namespace poslab {

struct AnalysisOptions {
  int boundary_rows = 3;         // rows at each end checked for boundary effects
  double outlier_z = 3.0;        // |z| above this names a boundary row an outlier
  int top_pcs = 4;               // principal components whose projection along position is kept (figures, JSON)
  int max_components = 64;       // components above the noise floor whose period is read (at least top_pcs)
  int sinusoid_k = 8;            // K frequencies in the sin/cos bases of sinusoid_r2 (lowest) and its strongest twin
  uint64_t shuffle_seed = 1234;  // the row-shuffled control (copy 0; copy k uses shuffle_seed + k)
  int shuffle_copies = 100;      // row-shuffled copies whose adjacent cosines give the smoothness control's mean and sd
  bool keep_cosine_matrix = false;  // keep the (P, P) matrix in the result (for reports)
  int64_t row_offset = 0;           // index of W's first row in the source table (after --rows), for naming rows
};

struct Smoothness {
  double first_difference_energy = 0;  // Σ‖w_{i+1} − w_i‖² / Σ‖w_i − w̄‖²   (≈ 2 for white noise)
  double second_difference_energy = 0;  // Σ‖w_{i+2} − 2w_{i+1} + w_i‖² / Σ‖w_i − w̄‖²   (≈ 6 for white noise)
  double adjacent_cosine = 0;           // mean cos(w_i, w_{i+1})
};

// The adjacent cosine of row-shuffled copies: what it is when the rows carry no order.
struct ShuffleControl {
  int copies = 0;
  double mean = 0, sd = 0;  // over the copies (sample sd)
  double z = 0;  // (adjacent cosine of the table − mean) / sd: the table's order in units of the control's spread
};

struct BoundaryRow {
  int64_t position = 0;
  double norm = 0, norm_z = 0;                // row norm and its z-score against the interior
  double neighbour_cosine = 0, cosine_z = 0;  // cosine to the inward neighbour, z against interior adjacent cosines
  bool outlier = false;
  std::string reason;  // "" or what makes it an outlier
};

// A row holding a large share of the table's variance about its mean row, alone (a corrupted or rescaled row, or
// GPT-2's row 0 beside its next 63): the spectrum, the ranks and the noise floor then read that row more than the
// table's order along position.
struct HeavyRow {
  int64_t position = 0;
  double share = 0;  // ‖w_i − w̄‖² / Σ_j ‖w_j − w̄‖²
};
constexpr double kHeavyRowShare = 0.25;

// The half-decay offset is measured where the adjacent cosine stands this many sd above the row-shuffled copies':
// a z up to about 3 is noise (analysis/baselines.h), whose c(1) near 0 has no decay to halve.
constexpr double kHalfOffsetMinZ = 3.0;

struct PCFrequency {
  int component = 0;               // 1-based
  double explained = 0;            // share of the centred variance
  double cycles_per_position = 0;  // at the peak, refined between bins (periodicity.h)
  double period = 0;               // positions per cycle
  double power_share = 0;          // share of the curve's (non-DC) power at the dominant frequency's bin
  double spectral_entropy = 0;     // of the curve's power over the bins: 0 for one frequency, ≈ 1 for noise
  double slow_share = 0;           // of its variance in half a cycle and one cycle over the table (periodicity.h)
  std::vector<double> projection;  // (P,) the positions projected on this component; the first top_pcs only
};

// Held-out-row reconstruction at one stride s: rows 0, s, 2s, … and the last row are kept, every other row is
// rebuilt by linear interpolation between its kept neighbours.
struct Reconstruction {
  int stride = 0;
  double error = 0;  // Σ‖w_i − ŵ_i‖² / Σ‖w_i − w̄‖² over the rebuilt rows (0 = rebuilt exactly)
  double shuffled_error = 0;  // the same on the row-shuffled copy
};

// A linear probe for position (Wang & Chen 2020): ridge regression from a row to its index, fitted on the even
// rows (the penalty chosen by leave-one-out error among them) and scored on the odd rows.
struct PositionProbe {
  double mae = NAN;     // mean |predicted − true position| over the odd rows, in positions
  double r2 = NAN;      // 1 − Σ(pred − i)² / Σ(i − ī)² over the odd rows
  double lambda = NAN;  // the ridge penalty chosen
  double loo = NAN;     // its leave-one-out mean squared error on the even rows (positions²), which chose it
};

struct Analysis {
  std::string source;  // where the table came from
  int64_t positions = 0, dims = 0;
  int64_t row_offset = 0;  // first analysed row in the source table (--rows)
  // spectrum
  std::vector<double> singular_values;           // of W as it is
  std::vector<double> singular_values_centered;  // of W_c
  std::vector<double> explained_variance;        // σ_c,k² / Σσ_c²
  std::vector<double> cumulative_variance;
  int k50 = 0, k90 = 0, k95 = 0, k99 = 0;  // components for that share of the centred variance
  int k90_uncentered = 0;                  // the same on W as it is (σ²/Σσ²)
  // effective dimensionality, of the centred spectrum
  double effective_rank = 0;       // exp(H(p)), p = σ²/Σσ²
  double roy_vetterli_rank = 0;    // exp(H(p)), p = σ/Σσ
  double participation_ratio = 0;  // (Σσ²)² / Σσ⁴
  double stable_rank = 0;          // ‖W_c‖_F² / σ_max²
  NoiseFloor noise;                // components above the noise floor (Gavish–Donoho) and their share
  // similarity
  std::vector<double> adjacent_cosines;  // (P−1,) cos(w_i, w_{i+1})
  std::vector<double> cos_by_offset;     // (P−1,) entry k−1 = mean_i cos(w_i, w_{i+k})
  std::optional<int> half_offset;        // first k with cos_by_offset < ½ cos_by_offset(1), where neighbours are
                                         // alike beyond the shuffled copies (shuffle_control.z ≥ kHalfOffsetMinZ)
  torch::Tensor cosine_matrix;           // (P, P), only with keep_cosine_matrix
  // smoothness, and the same on a row-shuffled copy
  Smoothness smooth, shuffled;
  ShuffleControl shuffle_control;  // adjacent cosine of shuffle_copies shuffled copies
  // boundary effects
  std::vector<double> row_norms;
  std::vector<BoundaryRow> boundary;  // first and last boundary_rows rows
  std::vector<HeavyRow> heavy_rows;  // every row holding kHeavyRowShare of the centred variance or more, heaviest first
  // sinusoid-likeness, periods, circles and the helix
  std::vector<PCFrequency>
      pc_frequencies;               // every component above the noise floor (at least top_pcs, at most max_components)
  std::vector<Circle> circles;      // pairs of components above the floor at one period in quadrature, strongest first
  std::optional<Helix> helix;       // the strongest circle with a slow third component
  std::vector<double> periodogram;  // (⌊P/2⌋,) share of W_c's power at f = 1 … ⌊P/2⌋ cycles per table
  int sinusoid_k = 0;
  double sinusoid_r2 = 0;            // R² of W from the constant and the K lowest-frequency sin/cos over P positions
  double sinusoid_r2_strongest = 0;  // the same with the K frequencies of most power in the periodogram
  std::vector<int> strongest_frequencies;  // those K, strongest first (cycles per table)
  // translation invariance and monotonicity of the cosine matrix, and of one row-shuffled copy
  double translation_invariance = NAN, shuffled_translation_invariance = NAN;
  double monotonicity = NAN, shuffled_monotonicity = NAN;
  // interpolability
  std::vector<Reconstruction> reconstruction;  // strides 2, 4, 8, 16 while 2·stride <= P
  PositionProbe probe, shuffled_probe;         // on the table and on its row-shuffled copy
  double seconds = 0;                          // time the analysis took
};

// Runs every metric. Throws poslab::Error naming `source` when W is not 2-D, has fewer than 4 rows or
// 1 column, or holds NaN or Inf, and before it allocates when check_analysis_fits says it cannot fit.
Analysis analyze_table(const torch::Tensor& W, const std::string& source, const AnalysisOptions& opt = {});

// The memory analyze_table takes for a table of P positions × d dims, about, in bytes: the P × P similarity of its
// rows in float64 (nearly all of it past a few thousand rows) and two float64 copies of the table alive beside it
// (the table and its unit rows). Measured peaks above the process's start: 0.54 GB at P = 8192, d = 8 (the formula:
// 0.54 GB); 0.37 GB at P = 4096, d = 768 (0.19 GB: the SVD's work comes before the similarity).
int64_t analysis_memory_need(int64_t P, int64_t d);

// Stops (poslab::Error) when analysis_memory_need(P, d) is larger than `room` (util/memory.h memory_room, and
// check_memory_fits's rules), before anything is allocated: `what` names the table ("x.npy: 100,000 positions x 768
// dims"), the error both sizes and the limit, `hint` the way on.
void check_analysis_fits(int64_t P, int64_t d, const std::string& what, const std::string& hint,
                         const MemoryRoom& room);

// Rows [begin, end) of W, Python-slice style ("1:64", ":32", "5:", negative from the end).
// Throws poslab::Error for a malformed or empty range.
torch::Tensor select_rows(const torch::Tensor& W, const std::string& range, int64_t* first_row = nullptr);

// Pieces, exposed for tests.
int components_for(const std::vector<double>& cumulative, double share);
Smoothness smoothness(const torch::Tensor& W);        // W float64 (P, d)
torch::Tensor cosine_matrix(const torch::Tensor& W);  // (P, P) float64
torch::Tensor shuffle_rows(const torch::Tensor& W, uint64_t seed);
std::vector<int64_t> shuffle_permutation(int64_t P, uint64_t seed);  // the permutation shuffle_rows applies
// What float32's rounding moves a row's norm by, as a share of it, and its direction by, in radians, with room to
// spare: 16·2⁻²⁴/√n ≈ 1e-6/√n, n the fewest columns a nonzero row's weight lies in ((Σw²)²/Σw⁴). W float64 (P, d).
double row_rounding(const torch::Tensor& W);
// Mean, sd and z of the adjacent cosine over `copies` row-shuffled copies (seeds seed, seed + 1, …), read from the
// table's (P, P) cosine matrix C; `rounding` (row_rounding) is what tells a spread of the copies from rounding's.
ShuffleControl shuffle_control(const torch::Tensor& C, double rounding, double adjacent_cosine, int copies,
                               uint64_t seed);
double reconstruction_error(const torch::Tensor& W, int stride);  // W float64 (P, d), 2 <= stride < P
PositionProbe position_probe(const torch::Tensor& W);             // W float64 (P, d), P >= 4
// The strides the analysis reports for a table of P rows.
std::vector<int> reconstruction_strides(int64_t P);

}  // namespace poslab
