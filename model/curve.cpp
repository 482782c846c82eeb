// What/why: see curve.hpp.
#include "model/curve.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <Eigen/Dense>

#include "core/error.hpp"

namespace gaccum::model {

double PiecewiseLinear::operator()(double at) const {
  const std::size_t n = x.size();
  if (n == 0) return 0;
  if (n == 1) return y[0];
  // Segment [i-1, i] containing `at`, or the outer segment for extrapolation.
  std::size_t i = static_cast<std::size_t>(std::upper_bound(x.begin(), x.end(), at) - x.begin());
  i = std::clamp<std::size_t>(i, 1, n - 1);
  const double x0 = x[i - 1], x1 = x[i];
  return y[i - 1] + (y[i] - y[i - 1]) * (at - x0) / (x1 - x0);
}

PiecewiseLinear make_piecewise(std::vector<double> x, std::vector<double> y) {
  if (x.size() != y.size()) throw Error("make_piecewise: x and y differ in length");
  std::vector<std::size_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return x[a] < x[b]; });
  PiecewiseLinear c;
  for (std::size_t k = 0; k < order.size();) {
    std::size_t j = k;
    double sum = 0;
    while (j < order.size() && x[order[j]] == x[order[k]]) sum += y[order[j++]];
    c.x.push_back(x[order[k]]);
    c.y.push_back(sum / double(j - k));
    k = j;
  }
  return c;
}

std::vector<double> isotonic_increasing(const std::vector<double>& y, std::vector<double> w) {
  if (w.empty()) w.assign(y.size(), 1.0);
  // Blocks of pooled values: mean, weight, length.
  std::vector<double> mean, weight;
  std::vector<std::size_t> len;
  for (std::size_t i = 0; i < y.size(); ++i) {
    mean.push_back(y[i]);
    weight.push_back(w[i]);
    len.push_back(1);
    while (mean.size() > 1 && mean[mean.size() - 2] > mean.back()) {
      const std::size_t a = mean.size() - 2, b = mean.size() - 1;
      const double wt = weight[a] + weight[b];
      mean[a] = (mean[a] * weight[a] + mean[b] * weight[b]) / wt;
      weight[a] = wt;
      len[a] += len[b];
      mean.pop_back();
      weight.pop_back();
      len.pop_back();
    }
  }
  std::vector<double> out;
  for (std::size_t b = 0; b < mean.size(); ++b) out.insert(out.end(), len[b], mean[b]);
  return out;
}

LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& w) {
  const Eigen::Index n = static_cast<Eigen::Index>(x.size());
  LineFit f;
  if (n == 0) return f;
  if (n == 1) {
    f.a0 = y[0];
    f.residuals = {0.0};
    return f;
  }
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd rhs(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double sw = w.empty() ? 1.0 : std::sqrt(w[static_cast<std::size_t>(i)]);
    a(i, 0) = sw;
    a(i, 1) = sw * x[static_cast<std::size_t>(i)];
    rhs(i) = sw * y[static_cast<std::size_t>(i)];
  }
  Eigen::Vector2d c = a.colPivHouseholderQr().solve(rhs);
  f.a0 = c(0);
  f.a1 = c(1);
  double ss = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double r = y[i] - f(x[i]);
    f.residuals.push_back(r);
    f.max_abs_residual = std::max(f.max_abs_residual, std::fabs(r));
    ss += r * r;
  }
  f.rms_residual = std::sqrt(ss / double(x.size()));
  return f;
}

}  // namespace gaccum::model
