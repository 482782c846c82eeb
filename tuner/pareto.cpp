// What/why: the Pareto front of pareto.hpp, from the ranked candidates (any objective: the front
// is always about throughput).
#include "tuner/pareto.hpp"

#include <fmt/format.h>

namespace gaccum::tuner {

std::vector<ParetoPoint> pareto_front(const SearchResult& res) {
  std::vector<ParetoPoint> pts;
  for (Count p : res.limits.world_sizes) {
    ParetoPoint pt;
    pt.world_size = p;
    pts.push_back(pt);
  }
  auto at = [&](Count p) -> ParetoPoint* {
    for (auto& pt : pts)
      if (pt.world_size == p) return &pt;
    return nullptr;
  };
  for (std::uint32_t i : res.ranking) {
    const auto& c = res.candidates[i];
    ParetoPoint* pt = at(c.config().world_size);
    if (pt && (!pt->best || c.prediction.throughput > pt->throughput)) {
      pt->best = i;
      pt->throughput = c.prediction.throughput;
    }
  }
  const ParetoPoint* prev = nullptr;
  for (auto& pt : pts) {
    if (!pt.best) {
      pt.verdict = "no feasible config";
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
