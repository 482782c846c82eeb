// What: puts one prediction together from its terms (DESIGN.md, Cost model):
//   step_time  = k t(b) + comm_exposed(strategy) + optimizer
//   throughput = b k p / step_time;  tokens/s = throughput x real tokens per sample
//   band       = the same sum over the p10 (lo) and p90 (hi) of each measured term
//                (summing per-term quantiles over-states the spread of a sum: conservative)
//   token workloads (world_size > 1): + one blocking allreduce of the window's token count per
//                step (the loss is normalised by the real tokens of the whole window on all ranks,
//                as the runner does), exposed, not counted in collectives_per_step (which counts
//                gradient allreduces).
//   world_size 1: no communication, no copies, no buffers.
// Why: the profile model and the spec model differ in where t(b), the allreduce times and the
//      memory come from, never in how a step is composed; one template keeps them identical.
//      Allocation-free: the tuner calls it in its inner loop.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "model/allreduce_table.hpp"
#include "model/overlap.hpp"
#include "model/prediction.hpp"
#include "model/strategy_cost.hpp"

namespace gaccum::model {

struct StepTerms {
  TimeBand micro_step;             // one micro-step, t(b, p)
  Seconds backward = 0;            // its backward part
  TimeBand optimizer;              // zero_grad + optimizer step
  double overlap_efficiency = 1;   // model/overlap.hpp
  Seconds sync_copies = 0;         // copies of one synchronisation (kSyncCopyPasses passes)
  double tokens_per_sample = 0;    // real tokens per sample; 0 if not a sequence model
  TimeBand window_sync;            // the token-count allreduce of a token workload (p > 1), else 0
};

// InputError for impossible configurations (the CostModel contract); max_world_size 0: no limit.
inline void check_config(const Config& c, Count max_world_size, const std::string& reason) {
  if (c.micro_batch < 1) throw InputError(fmt::format("micro_batch must be at least 1, got {}", c.micro_batch));
  if (c.accum_steps < 1) throw InputError(fmt::format("accum_steps must be at least 1, got {}", c.accum_steps));
  if (c.world_size < 1) throw InputError(fmt::format("world_size must be at least 1, got {}", c.world_size));
  if (max_world_size > 0 && c.world_size > max_world_size)
    throw InputError(fmt::format("world_size {} is larger than the {} ranks available: {}", c.world_size, max_world_size,
                                 reason));
}

// bucket_time(i) -> TimeBand of bucket i's allreduce; fused: the whole gradient in one message.
template <class BucketTime>
Prediction assemble_prediction(const Config& c, const StepTerms& s, const std::vector<double>& ready,
                               BucketTime&& bucket_time, TimeBand fused, const MemoryBreakdown& memory) {
  Prediction out;
  out.config = c;
  out.memory = memory;
  SyncCost mid, lo, hi;
  if (c.world_size > 1) {
    const Count buckets = static_cast<Count>(ready.size());
    switch (c.strategy) {
      case Strategy::fused:
        mid = fused_sync(fused.mid, s.sync_copies);
        lo = fused_sync(fused.lo, s.sync_copies);
        hi = fused_sync(fused.hi, s.sync_copies);
        break;
      case Strategy::overlap:
      case Strategy::every_step: {
        auto x_mid = bucket_exposure(ready, s.backward, s.overlap_efficiency, [&](std::size_t i) { return bucket_time(i).mid; });
        auto x_lo = bucket_exposure(ready, s.backward, s.overlap_efficiency, [&](std::size_t i) { return bucket_time(i).lo; });
        auto x_hi = bucket_exposure(ready, s.backward, s.overlap_efficiency, [&](std::size_t i) { return bucket_time(i).hi; });
        if (c.strategy == Strategy::overlap) {
          mid = overlap_sync(x_mid, s.sync_copies, buckets);
          lo = overlap_sync(x_lo, s.sync_copies, buckets);
          hi = overlap_sync(x_hi, s.sync_copies, buckets);
        } else {
          mid = every_step_sync(x_mid, s.sync_copies, buckets, c.accum_steps);
          lo = every_step_sync(x_lo, s.sync_copies, buckets, c.accum_steps);
          hi = every_step_sync(x_hi, s.sync_copies, buckets, c.accum_steps);
        }
        break;
      }
    }
  }
  if (c.world_size > 1) {
    for (auto [cost, t] : {std::pair<SyncCost*, Seconds>{&mid, s.window_sync.mid}, {&lo, s.window_sync.lo}, {&hi, s.window_sync.hi}}) {
      cost->comm_total += t;
      cost->comm_exposed += t;
    }
  }
  const double k = double(c.accum_steps);
  out.time.compute = k * s.micro_step.mid;
  out.time.comm_total = mid.comm_total;
  out.time.comm_exposed = mid.comm_exposed;
  out.time.optimizer = s.optimizer.mid;
  out.time.step_time = out.time.compute + out.time.comm_exposed + out.time.optimizer;
  out.step_time_lo = k * s.micro_step.lo + lo.comm_exposed + s.optimizer.lo;
  out.step_time_hi = k * s.micro_step.hi + hi.comm_exposed + s.optimizer.hi;
  out.collectives_per_step = mid.collectives;
  out.throughput = out.time.step_time > 0 ? double(c.global_batch()) / out.time.step_time : 0;
  out.tokens_per_s = out.throughput * s.tokens_per_sample;
  return out;
}

}  // namespace gaccum::model
