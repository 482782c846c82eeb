// What: puts one prediction together from its terms (docs/DESIGN.md, Cost model):
//   step_time  = k t(b) + comm_exposed(strategy) + optimizer
//   throughput = b k p / step_time;  tokens/s = throughput x real tokens per sample
//   band       = the same sum over the low (lo) and high (hi) ends of each measured term's
//                95% median interval (TimingStats ci_lo/ci_hi; summing per-term bounds
//                over-states the interval of a sum: conservative)
//   token workloads (world_size > 1): + one blocking allreduce of the window's token count per
//                step (the loss is normalised by the real tokens of the whole window on all ranks,
//                as the runner does), exposed, not counted in collectives_per_step (which counts
//                gradient allreduces).
//   world_size 1: no communication, no copies, no buffers.
//   sharded plans (assemble_sharded_prediction): the collectives of model/plan_cost.hpp's
//   sync_plan, each phase's message split into its pieces (wrapped units for zero3/hsdp,
//   gradient buckets for zero1/zero2; n x cost(S/n), in every phase), and exposed by
//   pipelined_exposure behind the forward (all-gather prefetch) or the backward (all-gather +
//   reduce-scatter, sharing one link); after-backward and after-step messages are exposed whole:
//     exposed = k x fwd(AG) + (k-1) x bwd(per-micro-step) + bwd(per-micro-step + last-only)
//               + after_backward + after_step + copies x gradient syncs + token sync
//   The band (lo/hi) prices the same collectives against the interval ends of the compute.
// Why: the profile model and the spec model differ in where t(b), the allreduce times and the
//      memory come from, never in how a step is composed; one template keeps them identical.
//      Allocation-free: the tuner calls it in its inner loop.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "model/cost_model.hpp"
#include "model/allreduce_table.hpp"
#include "model/overlap.hpp"
#include "model/plan_cost.hpp"
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
// Returns the configuration with its precision and checkpointing resolved against `plans`.
inline Config check_config(const Config& c, Count max_world_size, const std::string& reason, const PlanSupport& plans) {
  if (c.micro_batch < 1) throw InputError(fmt::format("micro_batch must be at least 1, got {}", c.micro_batch));
  if (c.accum_steps < 1) throw InputError(fmt::format("accum_steps must be at least 1, got {}", c.accum_steps));
  if (c.world_size < 1) throw InputError(fmt::format("world_size must be at least 1, got {}", c.world_size));
  if (max_world_size > 0 && c.world_size > max_world_size)
    throw InputError(fmt::format("world_size {} is larger than the {} ranks available: {}", c.world_size, max_world_size,
                                 reason));
  const bool layout = !c.layout.data_parallel_only() || c.layout.sequence_parallel || c.layout.virtual_stages != 1;
  if (layout && !plans.layouts)
    throw InputError("tensor, pipeline and context parallel plans (--tp/--pp/--cp) are priced for a --spec on a cluster "
                     "only: a profile measures data-parallel ranks");
  // A layout's data-parallel part is checked by the model (model/parallel_plan.hpp layout_rejection).
  if (!layout)
    if (auto why = plan_rejection(c)) throw InputError(*why);
  Config r = c;
  r.precision = c.precision.value_or(plans.own_precision());
  r.checkpointing = c.checkpointing.value_or(plans.own_checkpointing());
  if (std::find(plans.precisions.begin(), plans.precisions.end(), *r.precision) == plans.precisions.end())
    throw InputError(fmt::format("precision {} is not available for this model: {}", to_string(*r.precision), plans.limits));
  if (std::find(plans.checkpointings.begin(), plans.checkpointings.end(), *r.checkpointing) == plans.checkpointings.end())
    throw InputError(
        fmt::format("activation checkpointing {} is not available for this model: {}", to_string(*r.checkpointing), plans.limits));
  return r;
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
  out.gradient_syncs = c.world_size > 1 ? (c.strategy == Strategy::every_step ? c.accum_steps : 1) : 0;
  out.throughput = out.time.step_time > 0 ? double(c.global_batch()) / out.time.step_time : 0;
  out.tokens_per_s = out.throughput * s.tokens_per_sample;
  return out;
}

// Sizes a sharded plan's collectives are cut from.
struct ShardedTerms {
  Bytes weights = 0, gradients = 0;  // W and G of one full replica
  Count units = 1;                   // wrapped units: zero3/hsdp gather and reduce-scatter one at a time
  Count buckets = 1;                 // gradient buckets: zero1/zero2 reduce-scatter one at a time
};

// cost(op, group, bytes) -> Seconds of one collective of `bytes` over the group's ranks.
template <class Cost>
Prediction assemble_sharded_prediction(const Config& c, const StepTerms& s, const ShardedTerms& u, Cost&& cost,
                                       const MemoryBreakdown& memory) {
  Prediction out;
  out.config = c;
  out.memory = memory;
  const SyncPlan plan = sync_plan(c);
  const bool per_unit = traits(c.sharding.sharding).shards_parameters;
  const Count grad_pieces = per_unit ? u.units : u.buckets;
  Seconds fwd_every = 0, bwd_every = 0, bwd_last = 0, after_bwd = 0, after_step = 0;
  Count calls = 0;
  for (const CollectiveUse& use : plan) {
    const Bytes msg = (use.parameters ? u.weights : u.gradients) / static_cast<Bytes>(use.divisor);
    const Count n = std::max<Count>(1, use.parameters ? u.units : grad_pieces);  // one collective per piece
    const Seconds t = double(n) * cost(use.op, use.group, msg / static_cast<Bytes>(n));
    calls += n * (use.every_micro_step ? c.accum_steps : 1);
    switch (use.phase) {
      case CommPhase::forward: fwd_every += t; break;
      case CommPhase::backward: (use.every_micro_step ? bwd_every : bwd_last) += t; break;
      case CommPhase::after_backward: after_bwd += t; break;
      case CommPhase::after_step: after_step += t; break;
    }
  }
  const double k = double(c.accum_steps);
  const Count syncs = plan.gradient_every_micro_step ? c.accum_steps : 1;
  const Seconds copies = s.sync_copies * double(syncs);
  const Count bwd_pieces = per_unit ? u.units : u.buckets;
  auto exposed = [&](Seconds micro, Seconds backward, Seconds window) {
    const Seconds fwd = std::max<Seconds>(0, micro - backward);
    Seconds x = k * pipelined_exposure(fwd_every, fwd, u.units, s.overlap_efficiency);
    x += (k - 1) * pipelined_exposure(bwd_every, backward, bwd_pieces, s.overlap_efficiency);
    x += pipelined_exposure(bwd_every + bwd_last, backward, bwd_pieces, s.overlap_efficiency);
    return x + after_bwd + after_step + copies + window;
  };
  const double scale_lo = s.micro_step.mid > 0 ? s.micro_step.lo / s.micro_step.mid : 1;
  const double scale_hi = s.micro_step.mid > 0 ? s.micro_step.hi / s.micro_step.mid : 1;
  const Seconds x_mid = exposed(s.micro_step.mid, s.backward, s.window_sync.mid);
  const Seconds x_lo = exposed(s.micro_step.lo, s.backward * scale_lo, s.window_sync.lo);
  const Seconds x_hi = exposed(s.micro_step.hi, s.backward * scale_hi, s.window_sync.hi);
  out.time.compute = k * s.micro_step.mid;
  out.time.comm_total = k * (fwd_every + bwd_every) + bwd_last + after_bwd + after_step + copies + s.window_sync.mid;
  out.time.comm_exposed = x_mid;
  out.time.optimizer = s.optimizer.mid;
  out.time.step_time = out.time.compute + out.time.comm_exposed + out.time.optimizer;
  out.step_time_lo = k * s.micro_step.lo + x_lo + s.optimizer.lo;
  out.step_time_hi = k * s.micro_step.hi + x_hi + s.optimizer.hi;
  out.collectives_per_step = calls;
  out.gradient_syncs = syncs;
  out.throughput = out.time.step_time > 0 ? double(c.global_batch()) / out.time.step_time : 0;
  out.tokens_per_s = out.throughput * s.tokens_per_sample;
  return out;
}

}  // namespace gaccum::model
