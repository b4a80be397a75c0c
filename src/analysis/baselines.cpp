#include "analysis/baselines.h"

#include <cmath>

#include <ATen/CPUGeneratorImpl.h>

#include "util/error.h"
#include "util/positions.h"

namespace poslab {

torch::Tensor random_table(int64_t positions, int64_t dims, double std, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  return at::normal(0.0, std, {positions, dims}, gen).to(torch::kFloat64);
}

torch::Tensor handbook_table(int64_t positions, int64_t dims, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  auto pos = torch::arange(positions, torch::kFloat64).unsqueeze(1);                   // (P, 1)
  auto f = 0.1 + 0.5 * torch::arange(dims, torch::kFloat64).unsqueeze(0) / dims;       // (1, d)
  auto phase = at::rand({1, dims}, gen).to(torch::kFloat64) * (2 * M_PI);              // (1, d)
  auto noise = at::normal(0.0, 1.0, {positions, dims}, gen).to(torch::kFloat64);       // (P, d)
  auto W = 0.5 * torch::sin(f * pos + phase) + 0.2 * noise * torch::exp(-0.01 * pos);  // (P, d)
  return W / std::sqrt(static_cast<double>(dims));
}

torch::Tensor random_walk_table(int64_t positions, int64_t dims, double std, uint64_t seed) {
  return random_table(positions, dims, std, seed).cumsum(0);  // (P, d)
}

torch::Tensor synthetic_table(const std::string& kind, int64_t positions, int64_t dims, uint64_t seed, double std) {
  if (positions < 4 || dims < 1)
    throw Error("--synthetic " + kind + ": --positions " + std::to_string(positions) + " --dim " +
                    std::to_string(dims) + ": needs at least 4 positions and 1 dim",
                "pass --positions 4 or more and --dim 1 or more");
  if (kind == "random") return random_table(positions, dims, std, seed);
  if (kind == "sinusoidal") return sinusoidal_table(positions, dims);
  if (kind == "handbook") return handbook_table(positions, dims, seed);
  if (kind == "walk") return random_walk_table(positions, dims, std, seed);
  throw Error("--synthetic " + kind + ": unknown kind", "use random, sinusoidal, handbook or walk");
}

std::vector<Baseline> baseline_analyses(int64_t positions, int64_t dims, const AnalysisOptions& opt) {
  std::vector<Baseline> out;
  for (const char* kind : {"random", "sinusoidal", "handbook", "walk"})
    out.push_back(
        {kind, analyze_table(synthetic_table(kind, positions, dims, kBaselineSeed, kBaselineStd), kind, opt)});
  return out;
}

}  // namespace poslab
