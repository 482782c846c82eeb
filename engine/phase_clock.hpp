// What: timestamps inside one timed iteration. A probe's body calls mark() between its phases
//       (e.g. make_batch | forward+loss | backward); intervals() returns the phase durations.
//   CPU : std::chrono::steady_clock (the work is synchronous).
//   CUDA: CUDA events recorded on the current stream (cuda_support.cpp), so phases are GPU time
//         and the host never waits inside an iteration; intervals() synchronises once at the end.
// Why: one timing mechanism for every probe, chosen by device in one place (nccl-tests style).
#pragma once

#include <memory>
#include <vector>

#include <torch/types.h>

#include "core/units.hpp"

namespace gaccum::engine {

class PhaseClock {
 public:
  virtual ~PhaseClock() = default;
  // Starts an iteration: forgets earlier marks and records mark 0.
  virtual void begin() = 0;
  // Records the end of the current phase (and the start of the next).
  virtual void mark() = 0;
  // Durations between consecutive marks since begin(), seconds (waits for the device).
  virtual std::vector<Seconds> intervals() = 0;
};

// Steady clock for CPU; CUDA events for a CUDA device (needs a CUDA LibTorch, else InputError).
std::unique_ptr<PhaseClock> clock_for(const torch::Device& device);

}  // namespace gaccum::engine
