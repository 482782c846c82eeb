// What: the gradient-statistics probe for the gradient noise scale (docs/DESIGN.md, Convergence;
//       McCandlish et al. 2018, App. A.1). For each micro_batch size b it draws `batches`
//       independent micro-batches of disjoint samples and records |G_b|^2, the squared L2 norm
//       of the full gradient of the mean loss (loss_sum / loss_terms) over all parameters,
//       accumulated in float64, at the initial parameters. With two or more sizes the model
//       solves E|G_b|^2 = |G|^2 + tr(Sigma)/b for |G|^2 and tr(Sigma) (sweep_plan.hpp).
// Runs in the parent process; not timed.
#pragma once

#include <cstdint>
#include <vector>

#include "core/profile.hpp"
#include "workloads/workload.hpp"

namespace gaccum::profiler {

// Two sizes, a small b and 8x larger: big = min(32, largest power of two <= max_fitting),
// small = max(min_b, big / 8); one size when max_fitting is 1 (or big would be below min_b: then
// min_b alone; min_b is the smallest micro_batch the model runs at).
std::vector<Count> default_grad_norm_sizes(Count max_fitting, Count min_b = 1);

std::vector<GradNormPoint> measure_grad_norms(workloads::Workload& workload, const std::vector<Count>& sizes,
                                              int batches, std::uint64_t seed);

}  // namespace gaccum::profiler
