#include "analysis/baselines.h"

#include <cmath>

#include <ATen/CPUGeneratorImpl.h>

#include "model/gpt.h"
#include "util/error.h"

namespace poslab {

namespace {
torch::Generator seeded(uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  return gen;
}
}  // namespace

torch::Tensor random_table(int64_t positions, int64_t dims, double std, uint64_t seed) {
  auto gen = seeded(seed);
  return at::normal(0.0, std, {positions, dims}, gen).to(torch::kFloat64);
}

torch::Tensor sinusoidal_baseline(int64_t positions, int64_t dims) {
  return sinusoidal_table(positions, dims).to(torch::kFloat64);
}

torch::Tensor handbook_table(int64_t positions, int64_t dims, uint64_t seed) {
  auto gen = seeded(seed);
  auto pos = torch::arange(positions, torch::kFloat64).unsqueeze(1);                        // (P, 1)
  auto f = 0.1 + 0.5 * torch::arange(dims, torch::kFloat64).unsqueeze(0) / dims;            // (1, d)
  auto phase = at::rand({1, dims}, gen).to(torch::kFloat64) * (2 * M_PI);                    // (1, d)
  auto noise = at::normal(0.0, 1.0, {positions, dims}, gen).to(torch::kFloat64);            // (P, d)
  auto W = 0.5 * torch::sin(f * pos + phase) + 0.2 * noise * torch::exp(-0.01 * pos);        // (P, d)
  return W / std::sqrt(static_cast<double>(dims));
}

torch::Tensor synthetic_table(const std::string& kind, int64_t positions, int64_t dims, uint64_t seed, double std) {
  if (positions < 4 || dims < 1)
    throw Error("--synthetic " + kind + ": --positions " + std::to_string(positions) + " --dim " + std::to_string(dims) +
                    ": needs at least 4 positions and 1 dim");
  if (kind == "random") return random_table(positions, dims, std, seed);
  if (kind == "sinusoidal") return sinusoidal_baseline(positions, dims);
  if (kind == "handbook") return handbook_table(positions, dims, seed);
  throw Error("--synthetic " + kind + ": unknown kind", "use random, sinusoidal or handbook");
}

}  // namespace poslab
