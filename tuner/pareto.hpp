// What: throughput against world_size: the best feasible throughput at each allowed world size,
//       which of those are on the Pareto front (more ranks must buy more throughput), and the
//       marginal gain of the ranks added since the previous front point:
//         marginal_per_device = (T(p) - T(p_prev)) / (p - p_prev)            samples/s per rank
//         marginal_efficiency = marginal_per_device / (T(p_prev) / p_prev)   1.0 = linear scaling
//       A world size without a ranked config says why: it divides no target global batch, or
//       the closest of its configs (fewest violated constraints, then the smallest peak memory)
//       and what it violates.
// Why: answers "is the 8th GPU worth it?" with numbers instead of a scaling plot to squint at.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tuner/search.hpp"

namespace gaccum::tuner {

struct ParetoPoint {
  Count world_size = 0;
  std::optional<std::uint32_t> best;  // best-throughput ranked candidate at this world size
  SamplesPerSecond throughput = 0;    // 0 when nothing is feasible here
  bool on_front = false;
  Count previous_world_size = 0;  // the front point before this one (0: none)
  SamplesPerSecond marginal_per_device = 0;
  double marginal_efficiency = 0;
  std::string verdict;  // e.g. "worth it: +0.93 of a rank's throughput per added rank"
  Count evaluated = 0;  // configs evaluated at this world size (0: it divides no target global batch)
};

// Efficiency at or above which added ranks are called "worth it".
inline constexpr double kWorthItEfficiency = 0.5;

// global_batch_min/max: the target (for the verdict of a world size that divides none of it).
std::vector<ParetoPoint> pareto_front(const SearchResult& result, Count global_batch_min = 0,
                                      Count global_batch_max = 0);

}  // namespace gaccum::tuner
