// What/why: the Pareto front of pareto.hpp, from the ranked candidates (any objective: the front
// is always about throughput).
#include "tuner/pareto.hpp"

#include <bitset>
#include <map>

#include <fmt/format.h>

#include "tuner/explanation.hpp"

namespace gaccum::tuner {
namespace {

std::size_t violated(const Candidate& c) {
  return std::bitset<8>(c.violations).count();
}

// Why nothing is ranked at world size p: "world_size 64 does not divide global_batch 384", or
// the closest config (fewest violated constraints, then the smallest peak) and what it violates.
std::string no_config_verdict(const SearchResult& res, Count p, const Candidate* closest, Count lo, Count hi) {
  if (!closest) {
    if (lo == 0) return fmt::format("no config: world_size {} divides no target global batch", p);
    return lo == hi ? fmt::format("no config: world_size {} does not divide global_batch {}", p, lo)
                    : fmt::format("no config: world_size {} divides no global_batch in {}-{}", p, lo, hi);
  }
  return fmt::format("{}: the closest, {}: {}", closest->feasible() ? "no ranked config" : "no feasible config",
                     short_config(closest->config()), reason_text(*closest, res.limits));
}

}  // namespace

std::vector<ParetoPoint> pareto_front(const SearchResult& res, Count global_batch_min, Count global_batch_max) {
  std::vector<ParetoPoint> pts;
  std::map<Count, std::size_t> index;  // world size -> its point
  for (Count p : res.limits.world_sizes) {
    ParetoPoint pt;
    pt.world_size = p;
    index.emplace(p, pts.size());
    pts.push_back(pt);
  }
  auto at = [&](Count p) -> ParetoPoint* {
    auto it = index.find(p);
    return it == index.end() ? nullptr : &pts[it->second];
  };
  std::vector<const Candidate*> closest(pts.size(), nullptr);  // per point, for its verdict when nothing ranks
  for (const auto& c : res.candidates) {
    auto it = index.find(c.config().world_size);
    if (it == index.end()) continue;
    ++pts[it->second].evaluated;
    const Candidate*& best = closest[it->second];
    if (!best || violated(c) < violated(*best) ||
        (violated(c) == violated(*best) && c.prediction.memory.peak < best->prediction.memory.peak))
      best = &c;
  }
  for (std::uint32_t i : res.ranking) {
    const auto& c = res.candidates[i];
    ParetoPoint* pt = at(c.config().world_size);
    if (pt && (!pt->best || c.prediction.throughput > pt->throughput)) {
      pt->best = i;
      pt->throughput = c.prediction.throughput;
    }
  }
  const ParetoPoint* prev = nullptr;
  for (std::size_t j = 0; j < pts.size(); ++j) {
    auto& pt = pts[j];
    if (!pt.best) {
      pt.verdict = no_config_verdict(res, pt.world_size, closest[j], global_batch_min, global_batch_max);
      continue;
    }
    if (prev && pt.throughput <= prev->throughput) {
      pt.verdict = fmt::format("not worth it: {:.0f} samples/s, no more than {:.0f} at world_size {}", pt.throughput,
                               prev->throughput, prev->world_size);
      continue;
    }
    pt.on_front = true;
    if (prev) {
      pt.previous_world_size = prev->world_size;
      pt.marginal_per_device = (pt.throughput - prev->throughput) / double(pt.world_size - prev->world_size);
      const double per_device_prev = prev->throughput / double(prev->world_size);
      pt.marginal_efficiency = pt.marginal_per_device / per_device_prev;
      pt.verdict = fmt::format(
          "{}: each rank added after {} brings {:.0f} samples/s, {:.0f}% of a rank's throughput at "
          "world_size {}",
          pt.marginal_efficiency >= kWorthItEfficiency ? "worth it" : "poor return", prev->world_size,
          pt.marginal_per_device, pt.marginal_efficiency * 100, prev->world_size);
    } else {
      pt.verdict = "baseline";
    }
    prev = &pt;
  }
  return pts;
}

}  // namespace gaccum::tuner
