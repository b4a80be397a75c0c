// Baseline tables to compare a learned position table with: the same metrics on tables of known kind.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace poslab {

// N(0, std²) entries: what a learned table is at initialisation.
torch::Tensor random_table(int64_t positions, int64_t dims, double std, uint64_t seed);

// The fixed sinusoidal encoding of Vaswani et al.
torch::Tensor sinusoidal_baseline(int64_t positions, int64_t dims);

// The seed chapter's simulated "trained" table: for dim j, 0.5·sin(f_j·pos + φ_j) with f_j = 0.1 + 0.5·j/d and
// φ_j ~ U(0, 2π), plus 0.2·N(0, 1)·exp(−0.01·pos) noise, all scaled by 1/√d.
torch::Tensor handbook_table(int64_t positions, int64_t dims, uint64_t seed);

// kind: random | sinusoidal | handbook. Throws poslab::Error for another kind or a non-positive size.
torch::Tensor synthetic_table(const std::string& kind, int64_t positions, int64_t dims, uint64_t seed, double std = 0.02);

inline const std::vector<std::string>& synthetic_kinds() {
  static const std::vector<std::string> kinds = {"random", "sinusoidal", "handbook"};
  return kinds;
}

}  // namespace poslab
