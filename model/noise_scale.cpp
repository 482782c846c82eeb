// What/why: see noise_scale.hpp.
#include "model/noise_scale.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <Eigen/Dense>
#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum::model {

NoiseScale noise_scale_two_sizes(Count bs, double es, Count bb, double eb) {
  if (!(bs >= 1 && bb > bs)) throw InputError("noise scale: needs two micro_batch sizes b_small < b_big");
  NoiseScale n;
  n.b_small = bs;
  n.b_big = bb;
  n.grad_sq_norm = (double(bb) * eb - double(bs) * es) / double(bb - bs);
  n.trace_sigma = (es - eb) / (1.0 / double(bs) - 1.0 / double(bb));
  n.b_simple = n.trace_sigma / n.grad_sq_norm;
  return n;
}

std::optional<NoiseScale> estimate_noise_scale(const std::vector<GradNormPoint>& points, std::vector<std::string>& notes) {
  std::map<Count, std::vector<double>> by_b;
  for (const auto& p : points)
    for (double v : p.sq_norms) by_b[p.micro_batch].push_back(v);
  for (auto it = by_b.begin(); it != by_b.end();)
    it = it->second.empty() ? by_b.erase(it) : std::next(it);
  if (by_b.size() < 2) {
    notes.push_back("noise scale: needs squared gradient norms at two micro_batch sizes; none estimated");
    return std::nullopt;
  }
  NoiseScale n;
  n.b_small = by_b.begin()->first;
  n.b_big = by_b.rbegin()->first;
  // Weighted least squares of mean |G_b|^2 on (1, 1/b); weight = number of samples.
  const Eigen::Index m = static_cast<Eigen::Index>(by_b.size());
  Eigen::MatrixXd a(m, 2);
  Eigen::VectorXd rhs(m);
  Eigen::Index i = 0;
  for (const auto& [b, v] : by_b) {
    double mean = 0;
    for (double x : v) mean += x;
    mean /= double(v.size());
    const double sw = std::sqrt(double(v.size()));
    a(i, 0) = sw;
    a(i, 1) = sw / double(b);
    rhs(i) = sw * mean;
    ++i;
  }
  Eigen::Vector2d u = a.colPivHouseholderQr().solve(rhs);
  n.grad_sq_norm = u(0);
  n.trace_sigma = u(1);
  if (!(n.grad_sq_norm > 0) || !(n.trace_sigma > 0)) {
    notes.push_back(fmt::format("noise scale: estimate not positive (|G|^2 = {:.4g}, tr(Sigma) = {:.4g}); more gradient-norm "
                                "samples are needed",
                                n.grad_sq_norm, n.trace_sigma));
    return std::nullopt;
  }
  n.b_simple = n.trace_sigma / n.grad_sq_norm;
  notes.push_back(fmt::format("noise scale: B_simple = {:.1f} samples from |G_b|^2 at micro_batch {} and {} (McCandlish "
                              "et al. 2018, App. A.1)",
                              n.b_simple, n.b_small, n.b_big));
  return n;
}

}  // namespace gaccum::model
