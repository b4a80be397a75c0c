#include "analysis/periodicity.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <mutex>
#include <numeric>
#include <vector>

#include "util/parallel.h"

namespace poslab {
namespace {

using cplx = std::complex<double>;

// Σ_p z_p e^{−2πi f p / P} for a real or complex curve z (the phasor advanced by one rotation a step: no sin or cos
// per sample; its drift over a few thousand steps stays near 1e-13).
template <typename T>
cplx dtft(const std::vector<T>& z, double f) {
  const cplx step = std::polar(1.0, -2 * M_PI * f / static_cast<double>(z.size()));
  cplx sum = 0, phasor = 1;
  for (const T& v : z) sum += v * phasor, phasor *= step;
  return sum;
}

// The maximum of g on [lo, hi] by golden-section search (g unimodal there: within a peak's main lobe).
template <typename G>
double argmax_on(G g, double lo, double hi) {
  const double r = (std::sqrt(5.0) - 1) / 2;
  double a = lo, b = hi, c = b - r * (b - a), d = a + r * (b - a);
  double gc = g(c), gd = g(d);
  for (int it = 0; it < 48 && b - a > 1e-9; ++it) {
    if (gc >= gd) {
      b = d, d = c, gd = gc, c = b - r * (b - a), gc = g(c);
    } else {
      a = c, c = d, gc = gd, d = a + r * (b - a), gd = g(d);
    }
  }
  return (a + b) / 2;
}

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

std::vector<double> power_spectrum(const std::vector<double>& x) {
  const size_t P = x.size();
  std::vector<double> cosine(P), sine(P);
  for (size_t p = 0; p < P; ++p) {
    cosine[p] = std::cos(2 * M_PI * static_cast<double>(p) / static_cast<double>(P));
    sine[p] = std::sin(2 * M_PI * static_cast<double>(p) / static_cast<double>(P));
  }
  std::vector<double> power(P / 2 + 1, 0.0);
  for (size_t f = 0; f < power.size(); ++f) {
    double re = 0, im = 0;
    for (size_t p = 0; p < P; ++p) {
      const size_t k = (f * p) % P;  // e^{−2πi f p / P} from the table
      re += x[p] * cosine[k];
      im -= x[p] * sine[k];
    }
    power[f] = re * re + im * im;
  }
  return power;
}

double sinusoid_energy(const std::vector<double>& x, double f) {
  // The fit of a + b·cos + c·sin less that of a alone: the sums below, taken about their means (a curve of P values
  // is centred, and a wave with a fractional number of turns is not, so a fit without the constant misreads it).
  const double P = static_cast<double>(x.size());
  double cc = 0, ss = 0, cs = 0, xc = 0, xs = 0, sum_c = 0, sum_s = 0, sum_x = 0;
  const cplx step = std::polar(1.0, 2 * M_PI * f / P);
  cplx phasor = 1;  // e^{2πi f p / P}
  for (double v : x) {
    const double c = phasor.real(), s = phasor.imag();
    cc += c * c, ss += s * s, cs += c * s, xc += v * c, xs += v * s;
    sum_c += c, sum_s += s, sum_x += v;
    phasor *= step;
  }
  cc -= sum_c * sum_c / P, ss -= sum_s * sum_s / P, cs -= sum_c * sum_s / P;
  xc -= sum_x * sum_c / P, xs -= sum_x * sum_s / P;
  const double det = cc * ss - cs * cs;
  if (det <= 1e-9 * cc * ss)  // sin and cos nearly parallel (f near 0 or P/2): the better of the two alone
    return std::max(cc > 0 ? xc * xc / cc : 0.0, ss > 0 ? xs * xs / ss : 0.0);
  return (ss * xc * xc - 2 * cs * xc * xs + cc * xs * xs) / det;  // bᵀ G⁻¹ b
}

double dtft_power(const std::vector<double>& x, double f) { return std::norm(dtft(x, f)); }

CurvePeriod curve_period(const std::vector<double>& x) {
  CurvePeriod c;
  const std::vector<double> power = power_spectrum(x);
  const size_t bins = power.size() - 1;  // f = 1 … ⌊P/2⌋
  const double total = std::accumulate(power.begin() + 1, power.end(), 0.0);
  const double energy = std::inner_product(x.begin(), x.end(), x.begin(), 0.0);
  if (bins < 1 || !(total > 1e-20 * static_cast<double>(x.size()) * energy)) return c;  // flat: no period
  size_t peak = 1;
  for (size_t f = 2; f <= bins; ++f)
    if (power[f] > power[peak]) peak = f;
  const double half = static_cast<double>(x.size()) / 2;
  c.frequency =
      argmax_on([&](double f) { return sinusoid_energy(x, f); }, std::max(0.5, peak - 0.5), std::min(half, peak + 0.5));
  c.period = static_cast<double>(x.size()) / c.frequency;
  c.power_share = power[peak] / total;
  double h = 0;
  for (size_t f = 1; f <= bins; ++f)
    if (power[f] > 0) h -= power[f] / total * std::log(power[f] / total);
  c.spectral_entropy = bins > 1 ? h / std::log(static_cast<double>(bins)) : 0.0;
  return c;
}

std::vector<Circle> find_circles(const std::vector<std::vector<double>>& projections,
                                 const std::vector<double>& explained, const std::vector<CurvePeriod>& periods) {
  const size_t n = std::min({projections.size(), explained.size(), periods.size()});
  std::vector<Circle> candidates;
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) {
      const double fa = periods[a].frequency, fb = periods[b].frequency;
      if (!(fa > 0) || !(fb > 0) || std::abs(fa - fb) > 1.0) continue;
      const auto& x = projections[a];
      const auto& y = projections[b];
      const double nx = std::sqrt(std::inner_product(x.begin(), x.end(), x.begin(), 0.0));
      const double ny = std::sqrt(std::inner_product(y.begin(), y.end(), y.begin(), 0.0));
      if (!(nx > 0) || !(ny > 0)) continue;
      std::vector<cplx> z(x.size());
      for (size_t p = 0; p < x.size(); ++p) z[p] = cplx(x[p] / nx, y[p] / ny);  // Σ|z|² = 2
      const double P = static_cast<double>(x.size());
      auto both = [&](double f) { return std::norm(dtft(z, f)) + std::norm(dtft(z, -f)); };
      const double f = argmax_on(both, std::max(0.25, std::min(fa, fb) - 0.5), std::min(P / 2, std::max(fa, fb) + 0.5));
      const double plus = std::norm(dtft(z, f)), minus = std::norm(dtft(z, -f));
      Circle c;
      c.first = static_cast<int>(a + 1);
      c.second = static_cast<int>(b + 1);
      c.frequency = f;
      c.period = P / f;
      c.explained = explained[a] + explained[b];
      c.concentration = (plus + minus) / (2 * P);  // Parseval: Σ over the P bins of |Z|² = P Σ|z|² = 2P
      c.circularity = plus + minus > 0 ? std::abs(plus - minus) / (plus + minus) : 0.0;
      if (f >= kCircleMinTurns && c.concentration >= kCircleConcentration && c.circularity >= kCircleCircularity)
        candidates.push_back(c);
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Circle& l, const Circle& r) { return l.explained > r.explained; });
  std::vector<Circle> circles;
  std::vector<bool> used(n + 1, false);
  for (const Circle& c : candidates) {
    if (used[c.first] || used[c.second]) continue;
    used[c.first] = used[c.second] = true;
    circles.push_back(c);
  }
  return circles;
}

std::optional<Helix> find_helix(const std::vector<Circle>& circles, const std::vector<double>& explained,
                                const std::vector<CurvePeriod>& periods) {
  if (circles.empty()) return std::nullopt;
  const Circle& c = circles.front();
  std::vector<bool> in_circle(periods.size() + 1, false);
  for (const Circle& o : circles) {
    if (o.first <= static_cast<int>(periods.size())) in_circle[o.first] = true;
    if (o.second <= static_cast<int>(periods.size())) in_circle[o.second] = true;
  }
  std::optional<Helix> best;
  for (size_t k = 0; k < periods.size() && k < explained.size(); ++k) {
    const CurvePeriod& p = periods[k];
    if (in_circle[k + 1] || !(p.frequency > 0) || p.frequency >= 1.5 || p.frequency > c.frequency ||
        p.power_share < kSlowPowerShare)
      continue;
    if (!best || explained[k] > explained[static_cast<size_t>(best->slow - 1)])
      best = Helix{c, static_cast<int>(k + 1), p.period, c.explained + explained[k]};
  }
  return best;
}

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
  return spread > 0 ? 1.0 - residual / spread : NAN;
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
