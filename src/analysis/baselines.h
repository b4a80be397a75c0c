// Baseline tables to compare a learned position table with: the same metrics on tables of known kind.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace poslab {

// N(0, std²) entries: what a learned table is at initialisation. (positions, dims) float64.
torch::Tensor random_table(int64_t positions, int64_t dims, double std, uint64_t seed);

// The seed chapter's simulated "trained" table: for dim j, 0.5·sin(f_j·pos + φ_j) with f_j = 0.1 + 0.5·j/d and
// φ_j ~ U(0, 2π), plus 0.2·N(0, 1)·exp(−0.01·pos) noise, all scaled by 1/√d.
torch::Tensor handbook_table(int64_t positions, int64_t dims, uint64_t seed);

// A random walk along position: row p the sum of p + 1 steps of N(0, std²) entries. Smooth noise: slowly varying and
// low rank, its principal components cosines of rising frequency (Antognini & Sohl-Dickstein 2018), so it reads
// as smooth, low-rank structure with circles (docs/analysis.md, "Trajectory and verdict"). (positions, dims) float64.
torch::Tensor random_walk_table(int64_t positions, int64_t dims, double std, uint64_t seed);

// kind: random | sinusoidal (util/positions.h) | handbook | walk. Throws poslab::Error for another kind or a size under
// 4 positions x 1 dim.
torch::Tensor synthetic_table(const std::string& kind, int64_t positions, int64_t dims, uint64_t seed,
                              double std = 0.02);

// The controls every comparison shows (analyze's table, the report's table and figures), the same numbers
// wherever they appear: a random N(0, kBaselineStd²) table (nanoGPT's init of a learned table) drawn with
// kBaselineSeed, the sinusoidal table, the handbook table drawn with kBaselineSeed, and a random walk of
// N(0, kBaselineStd²) steps drawn with kBaselineSeed (what smooth noise reads as).
inline constexpr uint64_t kBaselineSeed = 0;
// What the controls' columns are, said beside them: one draw each, so the random table's z is a draw too.
inline constexpr const char* kControlsDrawNote =
    "Each control is one draw (seed 0): the random table's adjacent-cosine z (adj z), against its own shuffled copies, "
    "is itself a draw of about N(0, 1), so a value up to about ±3 is noise (the verdict asks for 5).";
inline constexpr double kBaselineStd = 0.02;

struct Baseline {
  std::string name;  // random | sinusoidal | handbook | walk
  Analysis analysis;
};

// The four controls of shape (positions, dims), analysed with `opt`, in the order above.
std::vector<Baseline> baseline_analyses(int64_t positions, int64_t dims, const AnalysisOptions& opt = {});

}  // namespace poslab
