// What: the gradient-synchronisation cost of one optimizer step on one rank, per strategy
//       (docs/DESIGN.md, Cost model; how the runner implements each):
//   overlap     DDP + no_sync on the first k-1 micro-steps; the last backward launches the
//               bucket allreduces as buckets fill; after it: wait, divide by p, copy back.
//               exposed = bucket exposure of the last backward + copies;  collectives = buckets
//   fused       local accumulation; after the last backward one allreduce of one flat buffer
//               (flatten, allreduce, divide, unflatten); nothing overlapped.
//               exposed = fused allreduce + copies;                      collectives = 1
//   every-step  the overlap strategy's bucketed allreduce on every micro-step.
//               exposed = k x (bucket exposure of one backward + copies); collectives = k x buckets
//   world_size 1: no communication at all (the caller does not call these).
//   copies = kSyncCopyPasses element-wise passes over the gradient bytes (into the buckets or
//   the flat buffer, divide by p, back into .grad), each priced at one pass's time.
// Why: each strategy's exposed-communication term is what separates them (every-step against
//      overlap is the waste the tool quantifies).
// Units: Seconds per optimizer step.
#pragma once

#include "core/optimizer.hpp"
#include "core/strategy.hpp"
#include "core/units.hpp"
#include "model/overlap.hpp"

namespace gaccum::model {

inline constexpr int kSyncCopyPasses = 6;

struct SyncCost {
  Seconds comm_total = 0;    // allreduce time issued (hidden or not) + copies
  Seconds comm_exposed = 0;  // what the step waits for
  Count collectives = 0;     // allreduce calls per optimizer step
};

SyncCost overlap_sync(const Exposure& last_backward, Seconds copies, Count buckets);
SyncCost fused_sync(Seconds fused_allreduce, Seconds copies);
SyncCost every_step_sync(const Exposure& each_backward, Seconds copies, Count buckets, Count accum_steps);

// Element-wise passes over parameter-sized tensors one optimizer step makes (zero_grad
// included), LibTorch 1.13 C++ optimizers: adam 21 (exp_avg mul+add 5, exp_avg_sq mul+addcmul 5,
// denom sqrt+div+add 6, addcdiv 4, zero_grad 1), adamw 23 (+ decoupled decay 2), sgd with
// momentum 9 (buf mul+add 5, param add 3, zero_grad 1). Used to price one pass from the
// measured optimizer time; the counts live in the traits table of core/optimizer.hpp (lamb,
// profiled as adam: adam's count).
int optimizer_passes(Optimizer optimizer);

}  // namespace gaccum::model
