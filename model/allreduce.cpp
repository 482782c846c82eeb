// What/why: see allreduce.hpp.
#include "model/allreduce.hpp"

#include <algorithm>
#include <cmath>

#include <Eigen/Dense>

#include "core/error.hpp"

namespace gaccum::model {

AffineCost ring_allreduce(Count p, LinkParams link) {
  if (p <= 1) return {};
  const double steps = 2.0 * double(p - 1);
  return {steps * link.latency, steps / double(p) / link.bandwidth};
}

AffineCost hierarchical_allreduce(Count p, Count g, LinkParams intra, LinkParams inter) {
  if (p <= 1) return {};
  if (g < 1) throw Error("hierarchical_allreduce: gpus_per_node must be >= 1");
  if (p <= g) return ring_allreduce(p, intra);
  const Count n = (p + g - 1) / g;  // nodes used; the slowest node is a full one
  AffineCost c;
  if (g > 1) {  // reduce-scatter + allgather inside the node: (g-1) steps each
    const double steps = 2.0 * double(g - 1);
    c.latency += steps * intra.latency;
    c.seconds_per_byte += steps / double(g) / intra.bandwidth;
  }
  const double steps_e = 2.0 * double(n - 1);  // ring across nodes on a 1/g shard
  c.latency += steps_e * inter.latency;
  c.seconds_per_byte += steps_e / double(n) / double(g) / inter.bandwidth;
  return c;
}

RingFit fit_ring(Count p, const std::vector<std::pair<Bytes, Seconds>>& pts) {
  if (p < 2) throw Error("fit_ring: world_size must be >= 2");
  if (pts.empty()) throw Error("fit_ring: no points");
  RingFit f;
  f.world_size = p;
  f.points = static_cast<int>(pts.size());
  const double steps = 2.0 * double(p - 1);
  const double bus = steps / double(p);
  // Unknowns u = (alpha, 1/beta); row i scaled by 1/t_i: minimises relative error.
  auto solve = [&](bool with_alpha) {
    const Eigen::Index n = static_cast<Eigen::Index>(pts.size());
    const Eigen::Index m = with_alpha ? 2 : 1;
    Eigen::MatrixXd a(n, m);
    Eigen::VectorXd rhs(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const auto& [s, t] = pts[static_cast<std::size_t>(i)];
      const double w = 1.0 / std::max(t, 1e-12);
      if (with_alpha) a(i, 0) = steps * w;
      a(i, m - 1) = bus * double(s) * w;
      rhs(i) = 1.0;  // t_i * w
    }
    Eigen::VectorXd u = a.colPivHouseholderQr().solve(rhs);
    return std::make_pair(with_alpha ? u(0) : 0.0, u(m - 1));
  };
  std::pair<double, double> u = pts.size() >= 2 ? solve(true) : solve(false);
  if (u.first < 0 || u.second <= 0) u = solve(false);
  double alpha = u.first, inv_beta = u.second;
  if (inv_beta <= 0) {  // all sizes latency-bound and noisy: pure latency model
    inv_beta = 0;
    double mean_t = 0;
    for (const auto& pt : pts) mean_t += pt.second;
    alpha = mean_t / double(pts.size()) / steps;
  }
  f.link.latency = alpha;
  f.link.bandwidth = inv_beta > 0 ? 1.0 / inv_beta : 1e30;
  double ss = 0;
  for (const auto& [s, t] : pts) {
    const double fit = steps * alpha + bus * double(s) * inv_beta;
    const double rel = t > 0 ? std::fabs(fit - t) / t : 0.0;
    f.max_rel_residual = std::max(f.max_rel_residual, rel);
    ss += rel * rel;
  }
  f.rms_rel_residual = std::sqrt(ss / double(pts.size()));
  return f;
}

}  // namespace gaccum::model
