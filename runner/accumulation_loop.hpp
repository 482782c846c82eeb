// What: the training loop of a validation run, as a real job runs it, on one rank. Per window w
//       (one optimizer step):
//         zero_grad
//         the window's loss terms across ranks (token workloads: counted without building the
//           batches and allreduced before the first backward; otherwise the window's samples)
//         k micro-steps m: forward, loss_sum * world_size / window_loss_terms, backward, with the
//           plan's synchronisation around them (comm/window_sync.hpp: DDP's comm/grad_sync.hpp,
//           ZeRO's comm/sharded_sync.hpp)
//         optimizer step (on the tensors the plan gives it), then the plan's after-step
//           all-gather (zero1/zero2)
//       The loss scale world_size / global_terms makes the averaged gradient the gradient of the
//       mean loss over every real token (samples for non-sequence workloads) of the window.
//       Ranks and micro-steps past the end of the data (the partial window) skip forward and
//       backward but still join the collectives.
//   Everything that is not training (progress, the zero check, gradient norms, the reference
//   gradients, memory marks, test faults) is attached through LoopObserver; the loop times each
//   observer call and leaves it out of the step: step_time = wall time of the window minus
//   observer time (instrumentation) minus the window checks. Timing is engine/phase_clock.hpp's
//   (steady clock on CPU; CUDA events on a GPU, read once after the window, so the step never
//   waits for the device inside).
// Why: the loop reads top to bottom like the training step it proves (docs/DESIGN.md, "Runner").
// Units: seconds.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "comm/communicator.hpp"
#include "comm/window_sync.hpp"
#include "engine/phase_clock.hpp"
#include "runner/run_record.hpp"
#include "runner/run_spec.hpp"
#include "workloads/optimizer.hpp"
#include "workloads/workload.hpp"

namespace gaccum::runner {

// One micro-step as the observer sees it after backward.
struct MicroStep {
  Count window = 0, micro = 0;
  Count first = 0, count = 0;  // samples read (count 0: nothing left in the partial window)
  Count loss_terms = 0;        // of this micro-batch
  double loss_scale = 0;       // what loss_sum was multiplied by before backward
};

class LoopObserver {
 public:
  virtual ~LoopObserver() = default;
  virtual void window_begin(Count /*w*/) {}  // before the window's clock starts
  // Whether to zero the gradients at the start of window w (a test fault says no).
  virtual bool zero_gradients(Count /*w*/) { return true; }
  virtual void after_zero_grad(Count /*w*/) {}
  virtual void micro_begin(Count /*w*/, Count /*m*/) {}
  // The loss scale to use (a test fault returns a wrong one); `correct` is world / window terms.
  virtual double loss_scale(const MicroStep& /*ms*/, double correct) { return correct; }
  virtual void after_backward(const MicroStep& /*ms*/) {}
  virtual void after_sync(Count /*w*/) {}
  virtual void check_window(Count /*w*/) {}  // timed apart: the reference gradients
  virtual void after_step(Count /*w*/) {}    // after the window's clock stopped
};

struct LoopContext {
  const RunSpec& spec;
  workloads::Workload& workload;
  const std::vector<torch::Tensor>& params;
  comm::Communicator* comm;  // null at world_size 1
  comm::WindowSync& sync;
  torch::optim::Optimizer& optimizer;
  int rank = 0;
  std::uint64_t seed = 0;  // the data stream
  // The window's clock; null: engine::clock_for(the workload's device). Every time the loop
  // reports comes from it (a test gives a fake clock and gets its figures back exactly).
  engine::PhaseClock* clock = nullptr;
};

// Runs spec.total_windows() windows and returns this rank's series (the observer's own columns,
// nonzero_at_start, g_small_sq and g_big_sq, are left empty for it to fill).
RankSteps run_windows(const LoopContext& c, LoopObserver& observer);

}  // namespace gaccum::runner
