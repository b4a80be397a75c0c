#include "util/positions.h"

#include <cmath>

namespace poslab {

torch::Tensor sinusoidal_table(int64_t positions, int64_t dims) {
  auto pos = torch::arange(positions, torch::kFloat64).unsqueeze(1);                    // (P, 1)
  auto i = torch::arange(0, dims, 2, torch::kFloat64);                                  // (C/2,)
  auto angle = pos * torch::exp(i * (-std::log(10000.0) / static_cast<double>(dims)));  // (P, C/2)
  auto pe = torch::zeros({positions, dims}, torch::kFloat64);                           // (P, C)
  pe.slice(1, 0, dims, 2).copy_(torch::sin(angle));
  pe.slice(1, 1, dims, 2).copy_(torch::cos(angle).slice(1, 0, dims / 2));
  return pe;
}

}  // namespace poslab
