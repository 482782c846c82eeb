// What: the profiler's planning arithmetic, free of LibTorch so it is unit-tested by hand:
//   - defaults that depend on the machine (rank counts, threads per rank, allreduce sizes),
//   - the micro-batch sweep: linear peak-memory prediction, the prediction-guided bisection
//     step, which micro-batches get compute measured (required points + refinement levels),
//     and the greedy choice of extra points under a time budget.
// Why: the cost model is judged on micro_batch sizes the profiler never measured, so where the
//      compute points lie (and how many the time budget allows) decides how honest its
//      interpolation is; these choices must be deterministic and testable.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/profile.hpp"
#include "core/units.hpp"

namespace gaccum::profiler {

// --- machine-dependent defaults ---------------------------------------------------------------

// CPU: powers of two up to min(cores, 4) (one compute rank per core at most);
// CUDA: powers of two up to the number of visible GPUs (one process per GPU).
std::vector<Count> default_ranks(bool cuda, int cpu_cores, int gpus);
// max(1, cpu_cores / max(ranks)): every rank process of every rank count uses this many
// intra-op threads (torch::set_num_threads), and so does the runner (contract with model/runner).
int default_threads_per_rank(int cpu_cores, const std::vector<Count>& ranks);
// 4 KiB, 16 KiB, ... (x4) up to the first size >= max(16 MiB, gradient_bytes).
std::vector<Bytes> default_allreduce_sizes(Bytes gradient_bytes);

// --- memory sweep -----------------------------------------------------------------------------

// Peak memory predicted at `micro_batch` by the line through the two largest measured
// micro-batches (peak is affine in micro_batch for fixed-shape workloads). With one point the
// line goes through (0, static) where static = weights + gradients + optimizer_state.
double predict_peak(const std::vector<MemoryPoint>& measured, Count micro_batch);
// Largest micro_batch whose predicted peak is <= cap; 0 when none, capped at `limit`.
Count predicted_largest_fitting(const std::vector<MemoryPoint>& measured, Bytes cap, Count limit);
// Next micro_batch to measure when `lo` fits and `hi` does not (0 when hi - lo <= 1): the
// predicted boundary if it lies strictly inside (lo, hi), else one above it, else the midpoint.
// With an affine memory curve this ends after two measurements (boundary fits, +1 does not).
Count next_bisect_candidate(Count lo, Count hi, Count predicted);

// Why the micro-batch sweep stopped growing.
enum class SweepStop { memory_cap, out_of_memory, max_micro_batch, time_budget, explicit_list, model_error };
std::string describe(SweepStop s);

// --- compute points ---------------------------------------------------------------------------

// Required points: the powers of two <= max_fitting and max_fitting itself. Refinement level 1
// holds the midpoints (a+c)/2 of consecutive required points that differ by >= 2 (1..64 with
// max 51: 3, 6, 12, 24, 41); level 2 the midpoints of level 1's intervals, and so on (3 levels).
struct ComputePointPlan {
  std::vector<Count> required;
  std::vector<std::vector<Count>> levels;
};
// `min_b` > 1 (the model raises below it): the required points start at min_b, then the powers
// of two above it.
ComputePointPlan plan_compute_points(Count max_fitting, Count min_b = 1);

// The required points plus extra points taken level by level (cheapest first within a level)
// while the summed estimated cost of the extras stays <= budget. Sorted ascending.
std::vector<Count> choose_compute_points(const ComputePointPlan& plan, const std::function<Seconds(Count)>& cost,
                                         Seconds budget);

// --- consistency of the measured compute points --------------------------------------------

// A compute point that disagrees with its neighbours or with the contention physics:
//   neighbours  an interior point (of one concurrency, ordered by micro_batch) whose median is
//               more than max(kNeighbourTolerance, 3 x its interval half-width) away from the
//               line through its two neighbours' medians;
//   contention  for concurrency p > 1, r(b) = t(b, p) / t(b, 1); a size whose r is more than
//               kContentionTolerance away (relative) from the median r of that concurrency, or
//               below 0.8 (sharing the cores made it faster). Both (b, p) and (b, 1) are listed:
//               either may be the disturbed one.
// Why: a disturbance that moved a stretch of a sweep (issue 16: concurrency-2 times of gpt-tiny
//      read 2x the concurrency-1 times for micro_batch 4-18, then 1.1x) is visible only
//      against the rest of the profile.
inline constexpr double kNeighbourTolerance = 0.20;
inline constexpr double kContentionTolerance = 0.25;
struct SuspectPoint {
  Count micro_batch = 0;
  Count concurrent_ranks = 1;
  std::string why;
};
std::vector<SuspectPoint> find_suspect_points(const std::vector<ComputePoint>& points, double ci_target);

// Linear interpolation (and extrapolation through the nearest two points) of measured
// (micro_batch, seconds) pairs; used to estimate the cost of unmeasured points.
Seconds interpolate_time(const std::vector<std::pair<Count, Seconds>>& points, Count micro_batch);

}  // namespace gaccum::profiler
