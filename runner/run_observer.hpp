// What: what a validation run attaches to its training loop (runner/accumulation_loop.hpp), on
//       one rank: progress (RankPosition and the watchdog's beat), the test faults
//       (runner/faults.hpp), the memory marks (the tracker's high-water mark is reset when the
//       timed steps begin and read when they end), the zero check at each window start, the
//       gradient norms for the noise scale (|G_b|^2 after micro-step 0, |G_B|^2 after the sync),
//       and at step 0 and the partial window the gradient checks (runner/gradients.hpp: rank
//       0 compares; every rank hashes its synced step-0 gradient).
// Why: instrumentation and fault injection in one place, outside the loop that they observe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/memory_tracker.hpp"
#include "engine/watchdog.hpp"
#include "runner/accumulation_loop.hpp"
#include "runner/faults.hpp"
#include "runner/gradients.hpp"

namespace gaccum::runner {

// What the observer found, merged into the rank's record.
struct Observations {
  std::vector<Count> nonzero_at_start;
  std::vector<double> g_small_sq, g_big_sq;    // < 0: not measured in that window
  std::optional<WindowChecks> step0, partial;  // rank 0
  std::string grads_hash_step0;
  Bytes peak_memory = 0, memory_at_reset = 0;
};

class RunObserver : public LoopObserver {
 public:
  RunObserver(const LoopContext& c, const Faults& faults, engine::DeviceMemory& memory, engine::Watchdog& watchdog);

  void window_begin(Count w) override;
  bool zero_gradients(Count w) override;
  void after_zero_grad(Count w) override;
  void micro_begin(Count w, Count m) override;
  double loss_scale(const MicroStep& ms, double correct) override;
  void after_backward(const MicroStep& ms) override;
  void after_sync(Count w) override;
  void check_window(Count w) override;
  void after_step(Count w) override;

  // After the last window: the peak over the timed steps (when no partial window ended them).
  Observations finish();

 private:
  bool check_step(Count w) const { return w == 0 || w >= c_.spec.full_windows(); }
  const LoopContext& c_;
  const Faults& faults_;
  engine::DeviceMemory& memory_;
  engine::Watchdog& watchdog_;
  Observations o_;
  std::vector<double> before_last_;
  double g_small_ = -1;
};

}  // namespace gaccum::runner
