// What: the one place that owns how things are timed (nccl-tests' driver role): warm-up, then
//       timed iterations, each barrier-aligned across the ranks of the job, each split into
//       phases by PhaseClock marks; then the cross-rank reduction (per iteration and phase, the
//       max over ranks, exchanged through the communicator) and the statistics
//       (TimingStats::from_samples: median, p10/p90, mean, raw samples).
// Why: every probe (compute, optimizer, allreduce, overlap) must time the same way, and the
//      slowest rank is what a synchronous data-parallel step waits for.
//
// Bandwidths, defined once here and used by every allreduce report (nccl-tests; docs/DESIGN.md, Profiler):
//   algbw = bytes / time                     (bytes: the message size each rank contributes)
//   busbw = algbw * 2(p-1)/p                 (a ring allreduce moves 2(p-1)/p x bytes over each
//                                              rank's link, so busbw is comparable to the link
//                                              bandwidth whatever p is; busbw = 0 at p = 1)
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "comm/communicator.hpp"
#include "core/profile.hpp"
#include "core/units.hpp"
#include "engine/phase_clock.hpp"

namespace gaccum::engine {

BytesPerSecond algbw(Bytes bytes, Seconds time);
// Reduce-scatter and all-gather (bytes: the full message S): busbw = algbw * (p-1)/p, each rank
// sends and receives (p-1)/p x S (nccl-tests' factor for both).
BytesPerSecond busbw_scatter_gather(Bytes bytes, Seconds time, Count world_size);
BytesPerSecond busbw(Bytes bytes, Seconds time, Count world_size);

struct TimedRun {
  std::vector<TimingStats> phases;     // per phase: stats of the per-iteration max over ranks
  TimingStats total;                   // per iteration: max over ranks of the sum of phases
  std::vector<Seconds> local_total;    // this rank's own per-iteration totals (for rank skew)
};

// Adaptive, interleaved timing of several points (e.g. the compute sweep's micro_batch sizes),
// as Google Benchmark and nccl-tests decide repetitions, with the points visited in rounds so
// that slow drift of the machine spreads evenly over them instead of moving a stretch:
//   warm-up  per point: `warmup` untimed iterations, then more (at most kExtraWarmup) while the
//            last one was still more than 5% faster than the one before it (caches, allocator;
//            judging needs warmup >= 2);
//   rounds   each visits every unfinished point for `chunk` timed iterations, in ascending
//            order, then descending, alternately;
//   stop     a point is finished once it has >= min_iters samples and its median's 95% interval
//            (TimingStats::ci_half_width) is within +-ci_target, or it reached max_iters, or the
//            rounds have used `budget` wall seconds. ci_target 0: exactly min_iters (fixed count).
//   judged   the interval (and the warm-up's "still faster") is the total's, or with
//            judged_phase >= 0 that phase's alone (a probe whose phase 0 only sets the scene).
// Every decision is taken on the cross-rank reduced samples (and rank 0's clock, reduced as a
// max), so all ranks run the same iterations and meet at the same barriers.
struct AdaptivePolicy {
  int warmup = 1;
  int min_iters = 5;
  int max_iters = 0;        // <= min_iters: min_iters
  int chunk = 2;
  double ci_target = 0;     // relative half-width, e.g. 0.02
  Seconds budget = 0;       // 0: no limit
  int judged_phase = -1;    // the phase whose interval decides (and the warm-up judges); -1: the total
};
inline constexpr int kExtraWarmup = 4;

struct AdaptiveRun {
  std::vector<TimedRun> points;
  std::vector<bool> converged;       // within ci_target (always true for a fixed count)
  int rounds = 0;
  Seconds wall = 0;                  // of the timed rounds (max over ranks)
  bool budget_exhausted = false;
};

class IterationDriver {
 public:
  // `comm` may be null (world_size 1: no barriers, no exchange). `clock`: the phase clock (null:
  // clock_for(device)); a test gives a manual one, so what it checks does not hang on the machine.
  IterationDriver(comm::Communicator* comm, torch::Device device, int warmup, int iters,
                  std::unique_ptr<PhaseClock> clock = nullptr);

  int warmup() const { return warmup_; }
  int iters() const { return iters_; }
  int rank() const;
  int world_size() const;

  // Runs `body` warmup + iters times (iters >= 1). Before each iteration all ranks meet at a
  // barrier, then the driver calls clock.begin(); the body does its work and calls clock.mark()
  // after each of its `phases` phases. Warm-up iterations are not recorded.
  TimedRun run(int phases, const std::function<void(PhaseClock&, int iteration)>& body);
  // Same, with explicit counts (e.g. the allreduce sweep's own warm-up/iterations).
  TimedRun run(int phases, int warmup, int iters, const std::function<void(PhaseClock&, int iteration)>& body);

  // Element-wise max over ranks of a rank-local [rows x cols] matrix (a zero-padded
  // [world x rows x cols] float64 allreduce-sum, which gathers every rank's rows). Identity at
  // world_size 1. Every rank gets the same result.
  // The interleaved adaptive run above: body(point, clock, iteration) with `iteration` counting
  // each point's own iterations (warm-up first) from 0.
  AdaptiveRun run_interleaved(int points, int phases, const AdaptivePolicy& policy,
                              const std::function<void(int point, PhaseClock&, int iteration)>& body);

  std::vector<std::vector<double>> max_over_ranks(const std::vector<std::vector<double>>& local);
  // Every rank's value of a scalar, indexed by rank (same gather).
  std::vector<double> gather(double mine);
  void barrier();

 private:
  // Barrier, clock.begin(), body, the phase check: this rank's {phase 0, ..., total} row.
  std::vector<double> one_iteration(int phases, const std::function<void(PhaseClock&)>& body);

  comm::Communicator* comm_;
  torch::Device device_;
  int warmup_, iters_;
  std::unique_ptr<PhaseClock> clock_;
};

}  // namespace gaccum::engine
