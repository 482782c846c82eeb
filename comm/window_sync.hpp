// What: the interface the accumulation loop drives to synchronise one optimizer step's
//       gradients, whatever the plan shards (docs/DESIGN.md, "Runner"):
//     comm/grad_sync.hpp     sharding none (DDP): overlap, fused, every-step allreduces
//     comm/sharded_sync.hpp  zero1, zero2, zero3: reduce-scatter into shards, the optimizer
//                            stepping this rank's shards, all-gathers of the parameters
//   Per window: zero_grad(); begin_step(k); for m in 0..k-1 { before_forward(m); forward;
//   before_backward(m); backward; after_backward(m); } optimizer step; after_optimizer_step().
//   Every rank makes the same calls (collectives are issued in unit order on every rank).
// Why: the loop reads the same for every plan; what a plan keeps and issues lives in one class.
// Units: Bytes, Seconds, counts per optimizer step.
#pragma once

#include <vector>

#include <torch/types.h>

#include "core/units.hpp"

namespace gaccum::comm {

struct GradSyncStats {
  std::vector<Count> collectives_per_micro;  // index m = micro-step (after-step all-gathers: the last)
  Count collectives = 0;                     // per optimizer step, every collective the plan issues
  Count launched_in_backward = 0;            // of those, launched by the hooks while backward ran
  Bytes bytes_reduced = 0;                   // sum of gradient message sizes (allreduce / reduce-scatter)
  Seconds exposed = 0;
  Seconds comm_total = 0;
};

class WindowSync {
 public:
  virtual ~WindowSync() = default;
  // The window's start: the gradients this plan holds are zeroed in place (allocated once).
  virtual void zero_grad() = 0;
  virtual void begin_step(Count accum_steps) = 0;
  virtual void before_forward(Count /*micro*/) {}
  virtual void before_backward(Count micro) = 0;
  virtual void after_backward(Count micro) = 0;
  virtual void after_optimizer_step() {}
  const GradSyncStats& stats() const { return stats_; }  // of the current/last step

  // Bytes of communication buffers held for the whole run.
  virtual Bytes buffer_bytes() const = 0;
  // Messages per synchronisation point: DDP buckets, or wrapped units.
  virtual Count units() const = 0;
  // Collectives the plan issues in micro-step m of a window of k (index m), and in all.
  virtual std::vector<Count> expected_per_micro(Count accum_steps) const = 0;
  Count expected_collectives(Count accum_steps) const;
  // The tensors the optimizer steps: the parameters (DDP) or this rank's shards, .grad bound.
  virtual std::vector<torch::Tensor> optimizer_parameters() const = 0;

  // For the checks (collectives where the plan shards: every rank calls them at the same point).
  // The gradient as the plan holds it now, parameter-shaped: after the window's first reduction
  // the reduced gradient (all-gathered from the shards), before it this rank's local .grad.
  virtual std::vector<torch::Tensor> full_gradients() = 0;
  // |reduced gradient|^2 (after the window's synchronisation).
  virtual double gradient_sq_norm() = 0;
  // Whether .grad holds this rank's local gradient after each backward (false where the hooks
  // move it into the shards at once: sharded every-step).
  virtual bool keeps_local_gradients() const { return true; }
  // The gradient tensors this rank holds (the zero scan at window start).
  virtual std::vector<torch::Tensor> held_gradients() const = 0;
  // Parameters present for a reference pass or a hash (zero3 gathers them; a no-op otherwise).
  virtual void gather_parameters() {}
  virtual void release_parameters() {}

 protected:
  GradSyncStats stats_;
};

// Sum of squared L2 norms of the defined tensors.
double sq_norm(const std::vector<torch::Tensor>& ts);

}  // namespace gaccum::comm
