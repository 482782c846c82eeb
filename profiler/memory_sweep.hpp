// What: the memory probe and the micro-batch sweep, run in the parent process with the exact
//       tracker (engine::memory_for: byte-exact tracking allocator on CPU, the caching
//       allocator's statistics on CUDA).
//   static parts, measured once as exact deltas of allocated bytes:
//     weights          building the workload: its parameters, plus any buffers or data-stream
//                      state it keeps (gpt: none, so weights == param bytes exactly; mlp: a
//                      20 KiB teacher matrix; a note in profile.json names the difference)
//     gradients        workloads::zero_grad (allocates every .grad)
//     optimizer_state  the first optimizer step (Adam: exp_avg + exp_avg_sq = 2 x parameter
//                      bytes; SGD with momentum: 1 x)
//   per micro_batch b (MemoryPoint): reset_peak, then a steady-state window of 2 micro-steps
//     (make_batch + forward + loss_sum/loss_terms + backward into the allocated gradients) and
//     an optimizer step; peak = allocated high-water mark over the window minus what was
//     allocated before the workload existed; activations = peak - (weights + gradients +
//     optimizer_state). Communication buffers are NOT included: with world_size > 1 the cost
//     model adds the gradient-sized bucket/fusion buffers analytically.
//   sweep (`auto`): b = 1, 2, 4, ... while the predicted peak of the next b fits the cap (from
//     two measured points on, within 2%), the
//     measured peak fits, no out-of-memory error (CUDA: c10::OutOfMemoryError, the boundary),
//     b <= max_micro_batch and the sweep's time budget lasts (checked from two points on); then a
//     prediction-guided bisection to the largest fitting b (sweep_plan.hpp), up to the predicted
//     boundary when the time budget ended the doubling. An explicit list is measured as given.
//   model errors: a size where the model raises is recorded with its message (see run()); the
//     profile's "model" section carries them and the smallest size that ran.
// Why: the cost model fits memory(b) from these points and checks it against the analytic
//      parameter count; the tuner needs the largest micro_batch that fits the cap.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/optim/optimizer.h>

#include "core/profile.hpp"
#include "engine/memory_tracker.hpp"
#include "profiler/sweep_plan.hpp"
#include "workloads/workload.hpp"

namespace gaccum::profiler {

class Progress;

struct MemorySweepOptions {
  std::vector<Count> micro_batches;   // explicit list (ascending); empty: auto sweep
  Bytes cap = 0;                      // the memory cap the peak must fit
  Count max_micro_batch = 64;
  Seconds time_budget = 0;            // for the sweep alone; 0 = unbounded
  std::uint64_t seed = 1;
};

struct MemorySweepResult {
  std::vector<MemoryPoint> points;    // every measured micro_batch, ascending
  std::vector<FailedMicroBatch> failed;  // where the model itself raised, ascending
  Count min_ran = 0;                  // smallest micro_batch that ran (0: none)
  Count max_fitting = 0;
  SweepStop stop = SweepStop::memory_cap;
  std::vector<std::pair<Count, Seconds>> micro_step_times;  // 2nd micro-step of each window
  Seconds optimizer_step_time = 0;    // the last window's optimizer step
  std::vector<std::string> notes;
};

class MemorySweep {
 public:
  // Installs the tracker (CPU) and builds the workload; measures the static parts.
  MemorySweep(const workloads::WorkloadConfig& cfg, Optimizer optimizer, double lr);
  // The same with the memory accounting given (a test's fake caching allocator); `memory` must
  // see the allocations of cfg's device.
  MemorySweep(const workloads::WorkloadConfig& cfg, Optimizer optimizer, double lr,
              std::unique_ptr<engine::DeviceMemory> memory);
  ~MemorySweep();

  workloads::Workload& workload() { return *workload_; }
  const MemoryPoint& static_parts() const { return static_; }  // micro_batch 0; peak = sum
  // An optimizer step's temporaries per tensor size (measured once, on scratch tensors).
  const OptimizerTransient& optimizer_transient() const { return transient_; }
  // One window at micro_batch b; nullopt on an out-of-memory error (the caching allocator's
  // cache is released and the gradients re-zeroed). `micro_step` receives the 2nd micro-step time.
  std::optional<MemoryPoint> measure(Count micro_batch, std::uint64_t seed, Seconds* micro_step = nullptr,
                                     Seconds* optimizer_step = nullptr);
  // The sweep. InfeasibleError "does not fit even at micro_batch N" when nothing fits. A
  // micro_batch at which the model raises (ModelError) is recorded in `failed` and the sweep goes
  // on: below the first size that runs (BatchNorm at micro_batch 1) it tries the next size, above
  // it the size is a boundary like out-of-memory. ModelError when the model raised at the first
  // three sizes tried (or at every listed one): its message, in full.
  MemorySweepResult run(const MemorySweepOptions& opts, Progress* progress = nullptr);
  // The peak predicted at `micro_batch` by the line through two measured sizes (2 and 4, or the
  // next ones that run), for sizing a default CPU device to the model; ModelError when the model
  // raises at 2, 4 and 8.
  double predicted_peak_at(Count micro_batch, std::uint64_t seed);

 private:
  std::unique_ptr<engine::DeviceMemory> mem_;
  Bytes base_ = 0;  // allocated before the workload existed
  std::unique_ptr<workloads::Workload> workload_;
  OptimizerTransient transient_;
  OptimizerTransient measure_optimizer_transient(Optimizer optimizer, double lr, const torch::Device& device);
  std::vector<torch::Tensor> params_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  MemoryPoint static_;
};

// The error the sweep throws when even the smallest micro_batch does not fit (exit 1).
std::string does_not_fit_message(const std::string& workload, Count micro_batch, Bytes needs, Bytes cap,
                                 const std::string& what);

}  // namespace gaccum::profiler
