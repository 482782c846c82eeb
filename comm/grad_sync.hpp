// What: the gradient synchroniser of a gradient-accumulation window: how the gradients that k
//       micro-steps accumulated on each rank become the same averaged gradient on every rank.
//   overlap    DDP with no_sync() on micro-steps 0..k-2: gradient buckets (core/buckets.hpp:
//              first 1 MiB, then 25 MiB, reverse registration order); during the LAST
//              micro-step's backward, autograd hooks copy each final gradient into its bucket
//              and launch the bucket's allreduce (asynchronously, buckets in order) as soon as
//              the bucket is full; after backward: wait for all, divide by world_size, copy
//              back into .grad. Nothing is launched before the last micro-step.
//   fused      Horovod backward_passes_per_step=k: local accumulation; after the last backward
//              one allreduce of one flat buffer holding every gradient; nothing overlapped.
//   every_step DDP without no_sync(): the overlap machinery on EVERY micro-step (buckets
//              launched from the hooks during each backward, waited for, averaged and copied
//              back after each backward), so .grad ends as the sum over micro-steps of averaged
//              gradients, k times the collectives of `overlap`.
//   world_size 1: no buffers, no hooks, no collectives.
// Why: the runner (and the profiler's overlap probe) must execute the strategies the cost model
//      predicts, with the same messages.
//
// Memory contract (model/ relies on it): communication buffers = the gradient bytes (sum of
// parameter bytes), allocated once at construction when world_size > 1, for all three
// strategies (bucket buffers for overlap/every_step, the fusion buffer for fused); 0 bytes when
// world_size == 1. Nothing else is allocated per step (views into the buffers are precomputed).
//
// Counting and timing (per optimizer step, this rank):
//   collectives_per_micro[m]  gradient allreduces issued during or right after micro-step m
//                             (overlap: n_buckets at m = k-1, else 0; fused: 1 at m = k-1;
//                             every_step: n_buckets at every m).
//   exposed    sum over the step's synchronisation points of (end of that backward -> end of the
//              sync: gradients averaged and back in .grad), seconds. overlap/fused: one point
//              (after the last backward); every_step: one after every backward.
//   comm_total wall time during which at least one gradient allreduce was in flight (union of
//              [launch, completion] intervals; completion from the backend where it reports it,
//              else when wait() returned), seconds.
//
// Use, per optimizer step: begin_step(k); for m in 0..k-1 { before_backward(m); backward (or
// nothing when the rank has no samples in micro-step m); after_backward(m); }. All ranks must
// make the same calls: collectives are issued in bucket order on every rank.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <torch/types.h>

#include "comm/communicator.hpp"
#include "comm/window_sync.hpp"
#include "core/buckets.hpp"
#include "core/strategy.hpp"
#include "core/units.hpp"

namespace gaccum::comm {

class GradReadyHooks;

class GradSync final : public WindowSync {
 public:
  // comm may be null only when world_size is 1. params: trainable parameters in registration
  // order, all of one dtype and device.
  GradSync(Communicator* comm, std::vector<torch::Tensor> params, Strategy strategy,
           Bytes first_bucket_cap = kFirstBucketCap, Bytes bucket_cap = kBucketCap);
  ~GradSync();
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  void zero_grad() override;  // .grad zeroed in place (allocated once)
  void begin_step(Count accum_steps) override;
  void before_backward(Count micro) override;
  void after_backward(Count micro) override;

  Strategy strategy() const { return strategy_; }
  int world_size() const { return world_size_; }
  // Bytes of communication buffers held (the memory contract above).
  Bytes buffer_bytes() const override { return buffer_bytes_; }
  // Messages of one synchronisation point, in launch order (fused: one; ws 1: none).
  const std::vector<Bucket>& buckets() const { return buckets_; }
  Count units() const override { return static_cast<Count>(buckets_.size()); }
  // Gradient allreduces per micro-step: overlap n_buckets in the last, fused 1 in the last,
  // every_step n_buckets in each; none at world_size 1.
  std::vector<Count> expected_per_micro(Count accum_steps) const override;
  std::vector<torch::Tensor> optimizer_parameters() const override { return params_; }
  std::vector<torch::Tensor> full_gradients() override;  // the parameters' .grad (no collective)
  double gradient_sq_norm() override;
  std::vector<torch::Tensor> held_gradients() const override;

 private:
  using Clock = DeviceTimer::Clock;
  struct Flight {
    std::unique_ptr<PendingCollective> work;
    Clock::time_point launched;
  };
  void on_grad_ready(std::size_t param);
  void launch_ready_locked(bool force_all);
  void launch_bucket_locked(std::size_t b, bool in_backward);
  void copy_in(std::size_t param);
  void finish_sync(Clock::time_point backward_end);

  Communicator* comm_;
  DeviceTimer timer_;  // the exposed time (comm/communicator.hpp)
  std::vector<torch::Tensor> params_;
  Strategy strategy_;
  int world_size_ = 1;
  Bytes buffer_bytes_ = 0;
  std::vector<Bucket> buckets_;
  std::vector<torch::Tensor> buffers_;       // one flat tensor per bucket
  std::vector<torch::Tensor> views_;         // per parameter: its slice of its bucket, param-shaped
  std::vector<std::size_t> bucket_of_;       // per parameter
  std::unique_ptr<GradReadyHooks> hooks_;

  // Per synchronisation point (guarded by mu_: hooks run on autograd threads).
  std::mutex mu_;
  bool armed_ = false;
  std::vector<std::size_t> pending_;         // per bucket: gradients still to arrive
  std::vector<bool> copied_;                 // per parameter
  std::size_t next_launch_ = 0;
  std::vector<Flight> flights_;
  Count current_micro_ = 0;

  Count accum_steps_ = 1;
  std::vector<std::pair<Clock::time_point, Clock::time_point>> intervals_;
};

// Length of the union of [start, end] intervals, seconds.
Seconds union_length(std::vector<std::pair<std::chrono::steady_clock::time_point,
                                           std::chrono::steady_clock::time_point>> intervals);

}  // namespace gaccum::comm
