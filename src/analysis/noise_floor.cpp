#include "analysis/noise_floor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

namespace poslab {
namespace {

// ∫ of the Marchenko–Pastur density from a = (1 − √β)² to t(φ) = a + (b − a)·sin²φ, b = (1 + √β)².
// The substitution turns the density √((b − t)(t − a)) / (2πβt) into the smooth (b − a)² sin²φ cos²φ / (πβ t(φ)),
// integrated by Simpson's rule on [0, φ].
double mp_cdf_at_angle(double beta, double phi) {
  const double a = (1 - std::sqrt(beta)) * (1 - std::sqrt(beta)), b = (1 + std::sqrt(beta)) * (1 + std::sqrt(beta));
  auto f = [&](double x) {
    const double s = std::sin(x), c = std::cos(x);
    const double t = a + (b - a) * s * s;
    return t > 0 ? (b - a) * (b - a) * s * s * c * c / (M_PI * beta * t)
                 : (b - a) * c * c / (M_PI * beta);  // limit at t = 0 (β = 1)
  };
  const int n = 2000;  // even
  const double h = phi / n;
  double sum = f(0) + f(phi);
  for (int i = 1; i < n; ++i) sum += (i % 2 ? 4 : 2) * f(i * h);
  return sum * h / 3;
}

}  // namespace

double marchenko_pastur_median(double beta) {
  if (!(beta > 0 && beta <= 1))
    throw std::invalid_argument("marchenko_pastur_median: beta must be in (0, 1], got " + std::to_string(beta));
  // ~5 ms each; every snapshot of a run has the same shape, so each β is computed once per process.
  static std::mutex mutex;
  static std::map<double, double> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(beta); it != cache.end()) return it->second;
  }
  double lo = 0, hi = M_PI / 2;
  for (int it = 0; it < 60; ++it) {
    const double mid = 0.5 * (lo + hi);
    (mp_cdf_at_angle(beta, mid) < 0.5 ? lo : hi) = mid;
  }
  const double a = (1 - std::sqrt(beta)) * (1 - std::sqrt(beta)), b = (1 + std::sqrt(beta)) * (1 + std::sqrt(beta));
  const double s = std::sin(0.5 * (lo + hi));
  const double median = a + (b - a) * s * s;
  std::lock_guard<std::mutex> lock(mutex);
  cache.emplace(beta, median);
  return median;
}

double optimal_threshold_known_noise(double beta) {
  return std::sqrt(2 * (beta + 1) + 8 * beta / (beta + 1 + std::sqrt(beta * beta + 14 * beta + 1)));
}

double optimal_threshold_coefficient(double beta) {
  return optimal_threshold_known_noise(beta) / std::sqrt(marchenko_pastur_median(beta));
}

NoiseFloor noise_floor(const std::vector<double>& sigma, int64_t P, int64_t d) {
  NoiseFloor nf;
  const int64_t m = std::min<int64_t>({P - 1, d, static_cast<int64_t>(sigma.size())});
  const int64_t n = std::max<int64_t>(P - 1, d);
  if (m < 1) return nf;
  nf.beta = static_cast<double>(m) / static_cast<double>(n);
  nf.omega = optimal_threshold_coefficient(nf.beta);
  std::vector<double> s(sigma.begin(), sigma.begin() + m);
  std::sort(s.begin(), s.end());
  const double median = m % 2 ? s[m / 2] : 0.5 * (s[m / 2 - 1] + s[m / 2]);
  const double root_n = std::sqrt(static_cast<double>(n));
  const double from_median = median / (root_n * std::sqrt(marchenko_pastur_median(nf.beta)));
  nf.smallest_bound = nf.beta <= kSmallestBoundMaxBeta && m >= kSmallestBoundMinValues
                          ? 2 * s.front() / (root_n * (1 - std::sqrt(nf.beta)))
                          : std::numeric_limits<double>::infinity();
  nf.smallest_decides = nf.smallest_bound < from_median;
  nf.noise_sigma = nf.smallest_decides ? nf.smallest_bound : from_median;
  nf.threshold = optimal_threshold_known_noise(nf.beta) * root_n * nf.noise_sigma;  // ω(β)·median where that decides
  if (nf.threshold < kRoundingFloor * s.back()) {
    nf.threshold = kRoundingFloor * s.back();
    nf.rounding_floor = true;
  }
  double total = 0, above = 0;
  for (int64_t k = 0; k < m; ++k) {
    total += sigma[k] * sigma[k];
    if (sigma[k] > nf.threshold) {
      ++nf.signal_rank;
      above += sigma[k] * sigma[k];
    }
  }
  nf.signal_share = total > 0 ? above / total : 0.0;
  return nf;
}

}  // namespace poslab
