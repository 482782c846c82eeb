// What: one-dimensional curves the fits are made of: a piecewise-linear curve through knots
//       (linear extrapolation from the two outer knots), isotonic (non-decreasing) smoothing,
//       and a weighted least-squares line with its residuals.
// Why: compute time and activation memory are functions of micro_batch that the profiler
//      samples at a few points; every fit in model/ is built from these three pieces.
// Units: whatever the caller's x and y are (micro_batch -> seconds, micro_batch -> bytes).
#pragma once

#include <vector>

namespace gaccum::model {

// y(x) through knots sorted by strictly increasing x. Inside [x.front(), x.back()] linear
// between neighbours; outside, the line through the two nearest knots. One knot: constant.
struct PiecewiseLinear {
  std::vector<double> x, y;
  bool empty() const { return x.empty(); }
  double operator()(double at) const;
  double first_x() const { return x.front(); }
  double last_x() const { return x.back(); }
};

// Knots from (x, y) pairs in any order; pairs with equal x are averaged.
PiecewiseLinear make_piecewise(std::vector<double> x, std::vector<double> y);

// Pool-adjacent-violators: the non-decreasing sequence closest to y in weighted least squares.
// Weights default to 1. Returns y unchanged when it is already non-decreasing.
std::vector<double> isotonic_increasing(const std::vector<double>& y, std::vector<double> w = {});

// y ~= a0 + a1 * x by weighted least squares (Eigen). Residuals are y - fit, in input order.
struct LineFit {
  double a0 = 0, a1 = 0;
  std::vector<double> residuals;
  double max_abs_residual = 0;
  double rms_residual = 0;
  double operator()(double at) const { return a0 + a1 * at; }
};
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& w = {});

}  // namespace gaccum::model
