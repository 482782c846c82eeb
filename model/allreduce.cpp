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

LinkFit fit_link(const std::vector<LinkFitRow>& rows) {
  if (rows.empty()) throw Error("fit_link: no rows");
  // Unknowns u = (alpha, 1/beta); row i scaled by 1/t_i: minimises relative error.
  auto solve = [&](bool with_alpha) {
    const Eigen::Index n = static_cast<Eigen::Index>(rows.size());
    const Eigen::Index m = with_alpha ? 2 : 1;
    Eigen::MatrixXd a(n, m);
    Eigen::VectorXd rhs(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const auto& r = rows[static_cast<std::size_t>(i)];
      const double w = 1.0 / std::max(r.measured, 1e-12);
      if (with_alpha) a(i, 0) = r.steps * w;
      a(i, m - 1) = r.bus_bytes * w;
      rhs(i) = (r.measured - r.offset) * w;
    }
    Eigen::VectorXd u = a.colPivHouseholderQr().solve(rhs);
    return std::make_pair(with_alpha ? u(0) : 0.0, u(m - 1));
  };
  std::pair<double, double> u = rows.size() >= 2 ? solve(true) : solve(false);
  LinkFit f;
  f.times_fall = rows.size() >= 2 && !(u.second > 0);
  f.latency_clamped = rows.size() >= 2 && u.second > 0 && u.first < 0;
  if (u.first < 0 || u.second <= 0) u = solve(false);
  double alpha = u.first, inv_beta = u.second;
  if (inv_beta <= 0) {  // all sizes latency-bound and noisy: pure latency model
    f.latency_only = true;
    inv_beta = 0;
    double sum = 0;
    for (const auto& r : rows) sum += r.steps > 0 ? std::max(0.0, r.measured - r.offset) / r.steps : 0.0;
    alpha = sum / double(rows.size());
  }
  f.points = static_cast<int>(rows.size());
  f.link.latency = alpha;
  f.link.bandwidth = inv_beta > 0 ? 1.0 / inv_beta : 1e30;
  double ss = 0;
  for (const auto& r : rows) {
    const double fit = r.offset + r.steps * alpha + r.bus_bytes * inv_beta;
    f.fitted.push_back(fit);
    const double rel = r.measured > 0 ? std::fabs(fit - r.measured) / r.measured : 0.0;
    f.max_rel_residual = std::max(f.max_rel_residual, rel);
    ss += rel * rel;
  }
  f.rms_rel_residual = std::sqrt(ss / double(rows.size()));
  return f;
}

RingFit fit_ring(Count p, const std::vector<std::pair<Bytes, Seconds>>& pts) {
  if (p < 2) throw Error("fit_ring: world_size must be >= 2");
  if (pts.empty()) throw Error("fit_ring: no points");
  const double steps = 2.0 * double(p - 1);
  const double bus = steps / double(p);
  std::vector<LinkFitRow> rows;
  for (const auto& [s, t] : pts) rows.push_back({steps, bus * double(s), 0, t});
  const LinkFit lf = fit_link(rows);
  RingFit f;
  f.world_size = p;
  f.points = lf.points;
  f.link = lf.link;
  f.max_rel_residual = lf.max_rel_residual;
  f.rms_rel_residual = lf.rms_rel_residual;
  return f;
}

}  // namespace gaccum::model
