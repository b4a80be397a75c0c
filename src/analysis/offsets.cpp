#include "analysis/offsets.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "util/parallel.h"

namespace poslab {
namespace {

// Pairs (a < b) of s with s[a] > s[b], by merge sort (s is sorted descending on return).
int64_t descending_pairs(std::vector<double>& s, std::vector<double>& buf, size_t lo, size_t hi) {
  if (hi - lo < 2) return 0;
  const size_t mid = (lo + hi) / 2;
  int64_t n = descending_pairs(s, buf, lo, mid) + descending_pairs(s, buf, mid, hi);
  size_t i = lo, j = mid, k = lo;
  while (i < mid && j < hi) {
    if (s[i] > s[j]) {  // both halves descending: take the larger
      buf[k++] = s[i++];
    } else {
      n += static_cast<int64_t>(i - lo);  // every left element taken so far (all > s[j]) pairs with s[j]
      buf[k++] = s[j++];
    }
  }
  while (i < mid) buf[k++] = s[i++];
  while (j < hi) {
    n += static_cast<int64_t>(mid - lo);
    buf[k++] = s[j++];
  }
  std::copy(buf.begin() + static_cast<std::ptrdiff_t>(lo), buf.begin() + static_cast<std::ptrdiff_t>(hi),
            s.begin() + static_cast<std::ptrdiff_t>(lo));
  return n;
}

// Σ over pairs (a < b) of 1 when s[a] > s[b], ½ when equal (s is left sorted; buf is scratch of s's size).
double falling_pairs(std::vector<double>& s, std::vector<double>& buf) {
  const int64_t falling = descending_pairs(s, buf, 0, s.size());
  int64_t ties = 0;  // s is sorted now: equal values sit in runs
  for (size_t i = 0, j = 0; i < s.size(); i = j) {
    while (j < s.size() && s[j] == s[i]) ++j;
    ties += static_cast<int64_t>(j - i) * static_cast<int64_t>(j - i - 1) / 2;
  }
  return static_cast<double>(falling) + 0.5 * static_cast<double>(ties);
}

}  // namespace

double translation_invariance(const double* C, int64_t P, const std::vector<int64_t>* perm) {
  auto at = [&](int64_t i, int64_t j) { return perm ? C[(*perm)[i] * P + (*perm)[j]] : C[i * P + j]; };
  std::vector<double> diag_mean(static_cast<size_t>(P), 0.0);
  double sum = 0;
  for (int64_t k = 1; k < P; ++k) {
    double s = 0;
    for (int64_t i = 0; i + k < P; ++i) s += at(i, i + k);
    diag_mean[k] = s / static_cast<double>(P - k);
    sum += s;
  }
  const double mean = sum / (static_cast<double>(P) * static_cast<double>(P - 1) / 2);
  double residual = 0, spread = 0;
  for (int64_t k = 1; k < P; ++k)
    for (int64_t i = 0; i + k < P; ++i) {
      const double v = at(i, i + k);
      residual += (v - diag_mean[k]) * (v - diag_mean[k]);
      spread += (v - mean) * (v - mean);
    }
  // Cosines equal but for float64's rounding of them (~1e-16: every row one row, all zero, or orthogonal) have no
  // spread to split.
  const double pairs = static_cast<double>(P) * static_cast<double>(P - 1) / 2;
  return spread > 1e-26 * pairs ? 1.0 - residual / spread : NAN;
}

double monotonicity(const double* C, int64_t P, const std::vector<int64_t>* perm) {
  auto at = [&](int64_t i, int64_t j) { return perm ? C[(*perm)[i] * P + (*perm)[j]] : C[i * P + j]; };
  if (P < 3) return NAN;
  // Rows in parallel (O(P² log P) in all: seconds at 16,384 positions); each row's count is a whole number of
  // halves, exact in a double, so the total is the same whatever the threads' order.
  double falling = 0;
  std::mutex total;
  parallel_for(0, P, 64, [&](int64_t begin, int64_t end) {
    double part = 0;
    std::vector<double> s, buf;
    s.reserve(static_cast<size_t>(P));
    for (int64_t i = begin; i < end; ++i) {
      s.clear();  // from row i rightwards, nearest first
      for (int64_t j = i + 1; j < P; ++j) s.push_back(at(i, j));
      buf.resize(s.size());
      part += falling_pairs(s, buf);
      s.clear();  // from row i leftwards, nearest first
      for (int64_t j = i - 1; j >= 0; --j) s.push_back(at(i, j));
      buf.resize(s.size());
      part += falling_pairs(s, buf);
    }
    const std::lock_guard<std::mutex> lock(total);
    falling += part;
  });
  const double triples = static_cast<double>(P) * static_cast<double>(P - 1) * static_cast<double>(P - 2) / 6;
  return falling / (2 * triples);
}

}  // namespace poslab
