// Periods along position, circles and the helix. Torch-free: curves are std::vector<double> of P values (a
// component's projection along position).
//
// Frequencies are in cycles per table (f cycles over P positions; period P / f positions). The power spectrum of a
// curve x is |X_f|², X_f = Σ_p x_p e^{−2πi f p / P}, at the integer bins f = 0 … ⌊P/2⌋. Every formula is written out
// in docs/analysis.md ("What each metric means": `pc_frequencies`, `circles`, `helix`).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace poslab {

// |X_f|² at f = 0 … ⌊P/2⌋ (a direct DFT; P up to a few thousand).
std::vector<double> power_spectrum(const std::vector<double>& x);

// |Σ_p x_p e^{−2πi f p / P}|² at any real f (the DTFT, for peaks between bins).
double dtft_power(const std::vector<double>& x, double f);

// The energy of x's least-squares fit by a + b·cos(2πfp/P) + c·sin(2πfp/P) beyond that of its mean a: at a pure
// sinusoid's own frequency, all of its energy about its mean, wherever f lies between bins (the DTFT's peak is pulled
// by the negative frequency's image) and however few turns it makes (a centred curve of a fractional number of
// turns is a sinusoid plus a constant).
double sinusoid_energy(const std::vector<double>& x, double f);

struct CurvePeriod {
  double frequency = 0;    // cycles per table at the peak, refined between bins (0 for a flat curve)
  double period = 0;       // P / frequency positions (0 for a flat curve)
  double power_share = 0;  // share of the non-DC power at the peak's bin
  double spectral_entropy = 0;  // −Σ p_f ln p_f / ln(⌊P/2⌋) over the non-DC bins: 0 for one bin, ≈ 1 for white noise
  // Share of the variance about the mean in the two slowest cosines that need not close over the table, half a cycle
  // and one cycle: cos(πk(p + ½)/P), k = 1, 2 (DCT-II). A ramp holds 98.6 % in them, bent or with an outlying end
  // row still most, white noise 2/P.
  double slow_share = 0;
};

// Whether a curve's peak lies at the period search's end, half a cycle over the table (a ramp, a half wave): its
// period, 2P there, is a lower bound, and reads "≥ 2P". `turns`: cycles over the table.
inline bool period_is_lower_bound(double turns) { return turns <= 0.5 + 1e-6; }

// The dominant period of a curve: the bin of most power (f ≥ 1), refined to the maximum of sinusoid_energy within
// half a bin of it; and its slow share.
CurvePeriod curve_period(const std::vector<double>& x);

// Two components at one period in quadrature: the rows go round a circle (an ellipse, each axis scaled to unit
// variance) in the plane of the two.
struct Circle {
  int first = 0, second = 0;  // 1-based component numbers, first < second
  double frequency = 0;       // turns over the table
  double period = 0;          // positions per turn
  double explained = 0;       // the pair's share of the centred variance
  double concentration = 0;   // share of the pair's power at ±frequency (1 = all of it)
  double circularity = 0;  // (|Z₊|² − |Z₋|²) / (|Z₊|² + |Z₋|²) in absolute value: 1 a circle turning one way, 0 a line
};

// A circle with a slow third component: a helix along the table.
struct Helix {
  Circle circle;
  int slow = 0;            // 1-based component number
  double slow_period = 0;  // its period (at least the circle's)
  double explained = 0;    // the three components' share of the centred variance
  // Turned apart (find_helix): the circle lies in the space of components circle.first, circle.second and slow, not
  // on two of them. axes[i] holds the weights on those three of the circle's two axes (i = 0, 1; the larger first)
  // and of the slow axis (i = 2), curves[i] its curve along position; circle's and slow_period's figures are the
  // axes'. Not turned: axes all 0, curves empty.
  bool rotated = false;
  std::array<std::array<double, 3>, 3> axes{};
  std::vector<std::vector<double>> curves;
};

// The helix's three components in increasing order: the space a turned helix lies in.
std::array<int, 3> helix_space(const Helix& h);

// Thresholds of the circle and helix rules (docs/analysis.md).
constexpr double kCircleConcentration = 0.5;  // at least half the pair's power at one frequency
constexpr double kCircleCircularity = 0.8;    // |Z₊|² at least 9 × |Z₋|²
constexpr double kCircleMinTurns = 0.9;       // about one turn at least; less is an arc
constexpr double kSlowShare = 0.5;            // the slow component's variance mostly in half a cycle and one cycle
constexpr double kRampTurns = 1.75;       // from this many turns a circle coordinate's slow share is ≈ 17 % at most
constexpr double kTurnVarianceRatio = 3;  // a component turned with a circle: within 3× a coordinate's variance
// A component's share of the variance below this: none worth a period or a circle (rounding's, in a float32 table);
// the summary still lists one above the noise floor (a float64 table's smallest hold 1e-10 and are signal).
constexpr double kNoVariance = 1e-9;

// The circles among components (projections[k] is component k + 1 along position, explained[k] its share of the
// variance, periods[k] its curve_period): pairs whose peaks lie within one bin, tested on z = x/‖x‖ + i·y/‖y‖ at
// the frequency both fit best near theirs. Greedy by the pair's explained share, each component in one circle at
// most, but a pair with a ramp (a component of slow_share ≥ kSlowShare beside a circle of kRampTurns or more) only
// after every pair without one. Strongest first.
std::vector<Circle> find_circles(const std::vector<std::vector<double>>& projections,
                                 const std::vector<double>& explained, const std::vector<CurvePeriod>& periods);

// The strongest circle with the strongest component outside every circle that is slow: at least kSlowShare of its
// variance in half a cycle and one cycle over the table (slow_share), its peak no faster than the circle. Failing that,
// the circle turned apart from each component outside every circle whose variance lies within kTurnVarianceRatio of a
// circle coordinate's (half the circle's), in turn, strongest first: principal components of nearly equal variance come
// out mixed, a slow axis of a circle coordinate's variance spread over all three. The slow axis
// is the direction of their space whose curve changes least over a quarter of the circle's period for its variance
// (the least generalized eigenvector of the Gram matrix of those differences against the curves'), the circle's
// plane the rest; the first whose axes pass the circle rule and whose slow axis passes the slow rule. nullopt
// without one.
std::optional<Helix> find_helix(const std::vector<Circle>& circles, const std::vector<std::vector<double>>& projections,
                                const std::vector<double>& explained, const std::vector<CurvePeriod>& periods);

}  // namespace poslab
