#include "analysis/periodicity.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <numeric>
#include <optional>
#include <vector>

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

// The maximum of g on [lo, hi]: the best of 33 evenly spaced points, ends included, then a golden-section search
// within a spacing of it. Half a bin either side of a peak may hold a side lobe's rise or a second wave's (on a few
// rows a bin is wide), where a golden-section search over the whole interval could settle on the lesser maximum.
template <typename G>
double argmax_on(G g, double lo, double hi) {
  constexpr int kPoints = 33;
  const double h = (hi - lo) / (kPoints - 1);
  double best = lo, g_best = g(lo);
  for (int i = 1; i < kPoints; ++i) {
    const double x = i + 1 == kPoints ? hi : lo + h * i;
    if (const double gx = g(x); gx > g_best) best = x, g_best = gx;
  }
  const double r = (std::sqrt(5.0) - 1) / 2;
  double a = std::max(lo, best - h), b = std::min(hi, best + h), c = b - r * (b - a), d = a + r * (b - a);
  double gc = g(c), gd = g(d);
  for (int it = 0; it < 48 && b - a > 1e-9; ++it) {
    if (gc >= gd) {
      b = d, d = c, gd = gc, c = b - r * (b - a), gc = g(c);
    } else {
      a = c, c = d, gc = gd, d = a + r * (b - a), gd = g(d);
    }
  }
  const double x = (a + b) / 2;
  return g(x) >= g_best ? x : best;  // at an end the search stops just inside it
}

// 3 × 3 matrices, row-major.
using Mat3 = std::array<double, 9>;
using Vec3 = std::array<double, 3>;

Mat3 operator*(const Mat3& a, const Mat3& b) {
  Mat3 c{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int m = 0; m < 3; ++m) c[i * 3 + j] += a[i * 3 + m] * b[m * 3 + j];
  return c;
}

// The eigenvalues of a symmetric A, ascending, and their unit eigenvectors (each signed with its largest weight
// positive), by cyclic Jacobi rotations.
void symmetric_eigen(Mat3 A, Vec3& values, std::array<Vec3, 3>& vectors) {
  Mat3 V = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  double scale = 0;
  for (double v : A) scale += v * v;
  for (int sweep = 0; sweep < 64; ++sweep) {
    const double off = A[1] * A[1] + A[2] * A[2] + A[5] * A[5];
    if (!(off > 1e-30 * scale)) break;
    for (int p = 0; p < 3; ++p)
      for (int q = p + 1; q < 3; ++q) {
        if (A[p * 3 + q] == 0) continue;
        // the rotation J in the plane (p, q) that zeroes A[p][q] in Jᵀ A J
        const double theta = (A[q * 3 + q] - A[p * 3 + p]) / (2 * A[p * 3 + q]);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double cs = 1 / std::sqrt(t * t + 1), sn = t * cs;
        auto turn = [&](double& x, double& y) {
          const double x0 = x;
          x = cs * x0 - sn * y, y = sn * x0 + cs * y;
        };
        for (int k = 0; k < 3; ++k) turn(A[k * 3 + p], A[k * 3 + q]);  // A J
        for (int k = 0; k < 3; ++k) turn(A[p * 3 + k], A[q * 3 + k]);  // Jᵀ (A J)
        for (int k = 0; k < 3; ++k) turn(V[k * 3 + p], V[k * 3 + q]);  // V J
      }
  }
  std::array<int, 3> order = {0, 1, 2};
  std::stable_sort(order.begin(), order.end(), [&](int l, int r) { return A[l * 3 + l] < A[r * 3 + r]; });
  for (int k = 0; k < 3; ++k) {
    values[k] = A[order[k] * 4];
    for (int i = 0; i < 3; ++i) vectors[k][i] = V[i * 3 + order[k]];
    const auto big = std::max_element(vectors[k].begin(), vectors[k].end(),
                                      [](double l, double r) { return std::abs(l) < std::abs(r); });
    if (*big < 0)
      for (double& x : vectors[k]) x = -x;
  }
}

// x and y as a circle: z = x/‖x‖ + i·y/‖y‖ at the frequency both fit best near theirs (within a bin of each
// other); nullopt when their peaks lie further apart or a curve is flat. Components and explained are left 0.
std::optional<Circle> circle_of(const std::vector<double>& x, const std::vector<double>& y, const CurvePeriod& px,
                                const CurvePeriod& py) {
  const double fa = px.frequency, fb = py.frequency;
  if (!(fa > 0) || !(fb > 0) || std::abs(fa - fb) > 1.0) return std::nullopt;
  const double nx = std::sqrt(std::inner_product(x.begin(), x.end(), x.begin(), 0.0));
  const double ny = std::sqrt(std::inner_product(y.begin(), y.end(), y.begin(), 0.0));
  if (!(nx > 0) || !(ny > 0)) return std::nullopt;
  const double P = static_cast<double>(x.size());
  // The frequency both coordinates fit best, each by a constant, a cosine and a sine (sinusoid_energy): exact between
  // bins. Their periodogram, |Z(f)|² + |Z(−f)|², fits no constant, and a centred wave of a fractional number of turns
  // has one: about one turn it misread the period by 2–4 %.
  std::vector<double> xn(x.size()), yn(y.size());
  for (size_t p = 0; p < x.size(); ++p) xn[p] = x[p] / nx, yn[p] = y[p] / ny;
  auto both = [&](double f) { return sinusoid_energy(xn, f) + sinusoid_energy(yn, f); };
  const double f = argmax_on(both, std::max(0.25, std::min(fa, fb) - 0.5), std::min(P / 2, std::max(fa, fb) + 0.5));
  std::vector<cplx> z(x.size());
  for (size_t p = 0; p < x.size(); ++p) z[p] = cplx(xn[p], yn[p]);  // Σ|z|² = 2
  const double plus = std::norm(dtft(z, f)), minus = std::norm(dtft(z, -f));
  Circle c;
  c.frequency = f;
  c.period = P / f;
  c.concentration = (plus + minus) / (2 * P);  // Parseval: Σ over the P bins of |Z|² = P Σ|z|² = 2P
  c.circularity = plus + minus > 0 ? std::abs(plus - minus) / (plus + minus) : 0.0;
  return c;
}

bool is_circle(const Circle& c) {
  return c.frequency >= kCircleMinTurns && c.concentration >= kCircleConcentration &&
         c.circularity >= kCircleCircularity;
}

// A slow axis for a circle turning `circle_frequency` times: its variance mostly in half a cycle and one cycle over
// the table, its peak no faster than the circle.
bool is_slow(const CurvePeriod& p, double circle_frequency) {
  return p.frequency > 0 && p.frequency <= circle_frequency && p.slow_share >= kSlowShare;
}

// CurvePeriod::slow_share. The cosines k = 1, 2 are orthogonal to the constant and to each other over the P
// positions, each of squared norm P/2.
double slow_share(const std::vector<double>& x) {
  const size_t P = x.size();
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(P);
  double variance = 0;
  for (double v : x) variance += (v - mean) * (v - mean);
  if (P < 3 || !(variance > 0)) return 0.0;
  double slow = 0;
  for (int k = 1; k <= 2; ++k) {
    double dot = 0;
    for (size_t p = 0; p < P; ++p)
      dot += x[p] * std::cos(M_PI * k * (static_cast<double>(p) + 0.5) / static_cast<double>(P));
    slow += dot * dot / (static_cast<double>(P) / 2);
  }
  return slow / variance;
}

// The circle c (components c.first and c.second) and component k turned apart (find_helix); nullopt when the
// turned axes are no circle along a slow axis.
std::optional<Helix> turned_apart(const Circle& c, int k, const std::vector<std::vector<double>>& projections,
                                  const std::vector<double>& explained) {
  const std::array<int, 3> comp = {c.first, c.second, k};
  std::array<const std::vector<double>*, 3> y{};
  for (int i = 0; i < 3; ++i) y[i] = &projections[static_cast<size_t>(comp[i] - 1)];
  const size_t P = y[0]->size();
  if (P < 3 || y[1]->size() != P || y[2]->size() != P) return std::nullopt;
  // G: the curves' Gram matrix (their variances, times P); D: that of their differences over a quarter of the
  // circle's period, where a circle coordinate's is largest (twice its variance) and a noise's no larger than at
  // one position.
  const size_t lag = std::clamp<size_t>(static_cast<size_t>(std::lround(c.period / 4)), 1, P - 1);
  Mat3 G{}, D{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const auto &a = *y[i], &b = *y[j];
      for (size_t p = 0; p < P; ++p) G[i * 3 + j] += a[p] * b[p];
      for (size_t p = 0; p + lag < P; ++p) D[i * 3 + j] += (a[p + lag] - a[p]) * (b[p + lag] - b[p]);
    }
  // The slow axis u minimizes uᵀDu / uᵀGu: with W = G^{-1/2}, u ∝ W e for e the least eigenvector of W D W.
  Vec3 g, mu, lambda;
  std::array<Vec3, 3> V, E, A;
  symmetric_eigen(G, g, V);
  if (!(g[0] > 1e-12 * g[2])) return std::nullopt;  // the three curves not independent
  Mat3 W{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int m = 0; m < 3; ++m) W[i * 3 + j] += V[m][i] * V[m][j] / std::sqrt(g[m]);
  symmetric_eigen(W * D * W, mu, E);
  Vec3 u{};
  for (int i = 0; i < 3; ++i)
    for (int m = 0; m < 3; ++m) u[i] += W[i * 3 + m] * E[0][m];
  const double norm = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
  for (double& v : u) v /= norm;
  // The circle's plane: u's orthogonal complement, on its principal axes (the eigenvectors of Q G Q, Q = I − u uᵀ,
  // of the two largest eigenvalues; u's own is 0).
  Mat3 Q{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) Q[i * 3 + j] = (i == j ? 1.0 : 0.0) - u[i] * u[j];
  symmetric_eigen(Q * G * Q, lambda, A);
  Helix h;
  h.rotated = true;
  h.axes = {A[2], A[1], u};
  // the three components' share of the variance per unit of ‖curve‖²
  const double per_unit = (explained[static_cast<size_t>(c.first - 1)] + explained[static_cast<size_t>(c.second - 1)] +
                           explained[static_cast<size_t>(k - 1)]) /
                          (G[0] + G[4] + G[8]);
  Vec3 share{};
  for (int r = 0; r < 3; ++r) {
    std::vector<double> curve(P, 0.0);
    for (int i = 0; i < 3; ++i)
      for (size_t p = 0; p < P; ++p) curve[p] += h.axes[r][i] * (*y[i])[p];
    share[r] = per_unit * std::inner_product(curve.begin(), curve.end(), curve.begin(), 0.0);
    h.curves.push_back(std::move(curve));
  }
  std::optional<Circle> circle =
      circle_of(h.curves[0], h.curves[1], curve_period(h.curves[0]), curve_period(h.curves[1]));
  const CurvePeriod slow = curve_period(h.curves[2]);
  if (!circle || !is_circle(*circle) || !is_slow(slow, circle->frequency)) return std::nullopt;
  h.circle = *circle;
  h.circle.first = c.first, h.circle.second = c.second;
  h.circle.explained = share[0] + share[1];
  h.slow = k;
  h.slow_period = slow.period;
  h.explained = share[0] + share[1] + share[2];
  return h;
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
  c.slow_share = slow_share(x);
  return c;
}

std::array<int, 3> helix_space(const Helix& h) {
  std::array<int, 3> within = {h.circle.first, h.circle.second, h.slow};
  std::sort(within.begin(), within.end());
  return within;
}

std::vector<Circle> find_circles(const std::vector<std::vector<double>>& projections,
                                 const std::vector<double>& explained, const std::vector<CurvePeriod>& periods) {
  const size_t n = std::min({projections.size(), explained.size(), periods.size()});
  std::vector<Circle> candidates;
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) {
      std::optional<Circle> c = circle_of(projections[a], projections[b], periods[a], periods[b]);
      if (!c || !is_circle(*c)) continue;
      c->first = static_cast<int>(a + 1);
      c->second = static_cast<int>(b + 1);
      c->explained = explained[a] + explained[b];
      candidates.push_back(*c);
    }
  }
  // A curve mostly in the two slowest cosines (slow_share) beside a circle of kRampTurns turns or more is a ramp, not
  // that circle's coordinate, which holds ≈ 17 % there at most: a bent ramp whose peak falls on the circle's frequency
  // pairs with either coordinate. Such pairs are taken only where no pair without a ramp claims their components,
  // then the circles are ordered by their share again.
  auto with_ramp = [&](const Circle& c) {
    return c.frequency >= kRampTurns && (periods[static_cast<size_t>(c.first - 1)].slow_share >= kSlowShare ||
                                         periods[static_cast<size_t>(c.second - 1)].slow_share >= kSlowShare);
  };
  std::stable_sort(candidates.begin(), candidates.end(), [&](const Circle& l, const Circle& r) {
    if (with_ramp(l) != with_ramp(r)) return !with_ramp(l);
    return l.explained > r.explained;
  });
  std::vector<Circle> circles;
  std::vector<bool> used(n + 1, false);
  for (const Circle& c : candidates) {
    if (used[c.first] || used[c.second]) continue;
    used[c.first] = used[c.second] = true;
    circles.push_back(c);
  }
  std::stable_sort(circles.begin(), circles.end(),
                   [](const Circle& l, const Circle& r) { return l.explained > r.explained; });
  return circles;
}

std::optional<Helix> find_helix(const std::vector<Circle>& circles, const std::vector<std::vector<double>>& projections,
                                const std::vector<double>& explained, const std::vector<CurvePeriod>& periods) {
  if (circles.empty()) return std::nullopt;
  const Circle& c = circles.front();
  const size_t n = std::min({projections.size(), explained.size(), periods.size()});
  std::vector<bool> in_circle(n + 1, false);
  for (const Circle& o : circles) {
    if (o.first <= static_cast<int>(n)) in_circle[o.first] = true;
    if (o.second <= static_cast<int>(n)) in_circle[o.second] = true;
  }
  std::optional<Helix> best;
  for (size_t k = 0; k < n; ++k) {
    if (in_circle[k + 1] || !is_slow(periods[k], c.frequency)) continue;
    if (best && explained[k] <= explained[static_cast<size_t>(best->slow - 1)]) continue;
    best = Helix{};
    best->circle = c;
    best->slow = static_cast<int>(k + 1);
    best->slow_period = periods[k].period;
    best->explained = c.explained + explained[k];
  }
  if (c.first > static_cast<int>(n) || c.second > static_cast<int>(n)) return best;
  // Components mix where their variances nearly match: those within kTurnVarianceRatio of a circle coordinate's
  // (half the circle's share), in order of variance, the strongest first.
  const double coordinate = c.explained / 2;
  auto mixes = [&](size_t k) {
    return explained[k] <= kTurnVarianceRatio * coordinate && explained[k] >= coordinate / kTurnVarianceRatio;
  };
  if (best) {
    // A slow component peaking at the circle's own frequency, of about a coordinate's variance, may hold a ramp
    // mixed with a circle coordinate (its peak the coordinate's): turned apart, the ramp is its own axis, its period
    // the ramp's. A ramp that is a component of its own comes out of the turn as itself.
    const auto k = static_cast<size_t>(best->slow - 1);
    if (std::abs(periods[k].frequency - c.frequency) <= 1.0 && mixes(k))
      if (std::optional<Helix> h = turned_apart(c, best->slow, projections, explained)) return h;
    return best;
  }
  for (size_t k = 0; k < n; ++k) {
    if (in_circle[k + 1] || !mixes(k)) continue;
    if (std::optional<Helix> h = turned_apart(c, static_cast<int>(k + 1), projections, explained)) return h;
  }
  return std::nullopt;
}

}  // namespace poslab
