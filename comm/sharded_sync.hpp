// What: sharded data parallelism for the runner (ZeRO, Rajbhandari et al. 2020; PyTorch FSDP):
//       the wrapped units are the DDP gradient buckets (core/buckets.hpp: the profile model's
//       units, so runner and model cut the same messages). Unit u holds S_u parameters in
//       bucket order, padded to P_u = ceil(S_u / N) N elements (the padding stays 0); rank r
//       owns elements [r s_u, (r+1) s_u), s_u = P_u / N, of every unit. N = world_size, or G
//       for hsdp:G.
//   zero1, zero2  every rank keeps the full parameters, as views into one flat P_u buffer per
//                 unit; the optimizer steps this rank's shard views; after the step each unit's
//                 shard is all-gathered into the flat buffers (one all-gather per unit).
//   zero3         every rank keeps only its shards (the optimizer's tensors); before each
//                 forward every unit is all-gathered into its flat buffer (the parameters are
//                 views into it), freed after the forward, all-gathered again before the
//                 backward and freed after it (FULL_SHARD's two gathers per micro-step).
//                 A staged model (unit_tensors given: the gpt's embedding, blocks and head, as
//                 FSDP wraps each transformer block) is gathered one unit at a time, from the
//                 model's unit hooks (workloads/workload.hpp StagedModel::UnitHooks):
//                   forward   before unit u: gather u (unless prefetched) and prefetch u + 1;
//                             after it: free u
//                   backward  when unit u's output gradient is ready (a gradient hook on it):
//                             free u + 1 (its backward is over), gather u (unless prefetched)
//                             and prefetch u - 1; after the backward: free what is left
//                 so at most two units are gathered (model/plan_cost.hpp kPrefetchUnits), and
//                 which two is fixed by the phase (core/profile.hpp MemoryPoint::phases, priced
//                 by model/profile_model.cpp). Other models (no unit hooks in LibTorch modules)
//                 gather every unit together (the working set is the whole model).
//                 The units of a staged model are its units in backward order (head first), so
//                 the reduce-scatters follow the backward as with buckets.
//   hsdp:G        zero3 inside shard groups of G consecutive ranks (comm/communicator.hpp split);
//                 in the window's last micro-step each unit's reduced shard is allreduced across
//                 the p / G replicas (the ranks G apart) right after its reduce-scatter.
//   gradients     every-step: the autograd hooks copy each final gradient into the fill buffer
//                 of its unit and drop .grad; a full unit is reduce-scattered (sum) into this
//                 rank's gradient shard, accumulated over the window's micro-steps.
//                 overlap / fused (FSDP no_sync): .grad accumulates the full local gradient
//                 over the window; in the last micro-step each unit is copied into the fill
//                 buffer and reduce-scattered, from the hooks during the backward (overlap) or
//                 after it (fused). Overlap at accum_steps 1 has no no_sync() window: it runs
//                 as every-step (core/strategy.hpp holds_whole_gradient). Either way the shards are divided by world_size after the
//                 window's last reduction, units in order on every rank.
//   Memory contract (model/plan_cost.hpp prices exactly these, CPU bytes):
//     weights     zero1/2: sum P_u (padded flat buffers); zero3: sum s_u at rest, + sum P_u
//                 gathered during a forward or a backward
//     gradients   shards sum s_u; + the full .grad (sum S_u) under fused, and overlap at k > 1
//     optimizer   state of the shard tensors (sum s_u elements per slot)
//     buffers     2 P_max: the fill buffer, and the all-to-all receive buffer of the
//                 reduce-scatter that also stages the all-gathers (comm/communicator.hpp:
//                 reduce_scatter_sum_into, all_gather_into), allocated once; no collective
//                 allocates while it runs
//   Collectives per optimizer step (counted in stats(), expected_per_micro()):
//     zero1/2: units reduce-scatters in every micro-step (every-step) or the last, + units
//     all-gathers after the step (counted in the last micro-step); zero3: 2 x units
//     all-gathers in every micro-step + the reduce-scatters as above; hsdp: zero3's + units
//     allreduces across the replicas in the last micro-step.
//   Timing: every collective here is blocking (Gloo), so exposed = the wall time spent inside
//   this class's calls and hooks during the step; comm_total = the collectives' own time.
// Why: `validate --sharding` must run the plans model/plan_cost.hpp prices and prove their
//      gradients, collectives and memory.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include <torch/types.h>

#include "comm/communicator.hpp"
#include "comm/window_sync.hpp"
#include "core/buckets.hpp"
#include "core/plan.hpp"
#include "core/strategy.hpp"

namespace gaccum::comm {

class GradReadyHooks;

// Deliberate training bugs for the runner's negative controls (runner/faults.hpp):
//   overwrite  each reduce-scatter writes the shard instead of adding to it (every-step keeps
//              only the last micro-step's gradient)
//   local      no reduce-scatter: a rank keeps its own chunk of its local gradient
enum class ShardFault { none, overwrite, local };

class ShardedSync final : public WindowSync {
 public:
  struct Unit {
    std::vector<std::size_t> params;                // registration indices, bucket order
    std::vector<std::int64_t> offsets;              // per entry of params: its first element in the unit
    std::int64_t numel = 0, padded = 0, shard = 0;  // S_u, P_u, s_u
  };

  // comm: world_size >= 2. params: trainable parameters in registration order, one dtype and
  // device, identical on every rank. InputError for none, zero1 + every-step, an hsdp G that does
  // not divide world_size or is not below it.
  // unit_tensors: a staged model's parameter tensors per unit in forward order (consecutive in
  // params), or empty; used by zero3/hsdp only (zero1/zero2 keep the buckets).
  // accum_steps: the window the run steps with (begin_step refuses another whose gradient holding
  // differs: overlap holds the whole gradient only when k > 1, core/strategy.hpp).
  ShardedSync(Communicator* comm, std::vector<torch::Tensor> params, ShardingChoice sharding, Strategy strategy,
              Count accum_steps, ShardFault fault = ShardFault::none, const std::vector<Count>& unit_tensors = {});
  ~ShardedSync() override;
  ShardedSync(const ShardedSync&) = delete;
  ShardedSync& operator=(const ShardedSync&) = delete;

  void zero_grad() override;
  void begin_step(Count accum_steps) override;
  void before_forward(Count micro) override;
  void before_backward(Count micro) override;
  void after_backward(Count micro) override;
  void after_optimizer_step() override;

  Bytes buffer_bytes() const override { return buffer_bytes_; }
  Count units() const override { return static_cast<Count>(units_.size()); }
  std::vector<Count> expected_per_micro(Count accum_steps) const override;
  std::vector<torch::Tensor> optimizer_parameters() const override { return shards_; }
  std::vector<torch::Tensor> full_gradients() override;
  double gradient_sq_norm() override;
  std::vector<torch::Tensor> held_gradients() const override;
  bool keeps_local_gradients() const override { return keep_full_grad_; }
  void gather_parameters() override;
  void release_parameters() override;

  const std::vector<Unit>& layout() const { return units_; }

  // Per-unit gathering of a staged model (u: the unit's forward index); nothing otherwise.
  bool gathers_per_unit() const { return per_unit_; }
  void before_unit_forward(Count u);
  // Frees u and registers the gradient hook on `out` that calls before_unit_backward(u).
  void after_unit_forward(Count u, const torch::Tensor& out);
  void before_unit_backward(Count u);

 private:
  using Clock = DeviceTimer::Clock;
  void on_grad_ready(std::size_t param);
  void fill_ready_locked(bool in_backward);
  void copy_into_fill(std::size_t param);
  void reduce_unit(std::size_t u, bool in_backward);
  void finish_reduction();
  void gather_all(bool counted);
  void free_all();
  void gather_unit(std::size_t k, bool counted);
  void free_unit(std::size_t k);
  std::size_t unit_index(Count forward_unit) const { return units_.size() - 1 - static_cast<std::size_t>(forward_unit); }
  void forward_gathers(Count u);
  void backward_gathers(Count u);
  void reduce_through(std::size_t end, bool hooked);
  // Host timestamps of the collectives, true on a GPU too: both synchronise the device first.
  Clock::time_point start_clock() const;
  void count(Count collectives, Clock::time_point start);
  bool reduces_in(Count micro) const;

  Communicator* comm_;                          // the job's world
  DeviceTimer timer_;                           // exposed and collective times (comm/communicator.hpp)
  std::unique_ptr<Communicator> shard_comm_;    // hsdp: this rank's shard group of G ranks
  std::unique_ptr<Communicator> replica_comm_;  // hsdp: the p / G ranks holding the same shard
  Communicator* group_ = nullptr;               // the shard group (the world but for hsdp)
  int divisor_ = 1;                             // world_size: the gradient is the mean over every rank
  std::vector<torch::Tensor> params_;
  Sharding sharding_;
  Strategy strategy_;
  ShardFault fault_;
  int rank_ = 0, world_ = 1;
  bool shards_params_ = false;   // zero3
  bool keep_full_grad_ = false;  // overlap / fused: .grad accumulates over the window
  std::vector<Unit> units_;
  std::vector<std::size_t> unit_of_;     // per parameter
  std::vector<std::int64_t> offset_of_;  // per parameter: first element in its unit
  std::vector<torch::Tensor> flat_;      // per unit: P_u elements (zero3: storage freed at rest)
  std::vector<torch::Tensor> shards_;    // per unit: s_u elements the optimizer steps, .grad = grad_shards_
  std::vector<torch::Tensor> grad_shards_;
  torch::Tensor fill_, recv_;  // P_max elements each
  Bytes buffer_bytes_ = 0;
  std::vector<bool> gathered_;  // per unit: its flat buffer holds the parameters (zero3)
  bool per_unit_ = false;       // zero3/hsdp of a staged model: units gathered one at a time
  bool forwarded_ = false;      // a unit hook ran in this micro-step's forward
  bool held_ = false;           // gather_parameters(): every unit held; the unit hooks stand aside
                                // (a rank's own reference pass must issue no collective)
  std::unique_ptr<GradReadyHooks> hooks_;

  // One synchronisation point (guarded by mu_: hooks run on autograd threads).
  std::mutex mu_;
  bool armed_ = false;
  std::vector<bool> ready_;           // per parameter: its final gradient arrived
  std::vector<std::size_t> pending_;  // per unit: gradients still to arrive
  std::size_t filling_ = 0;           // the unit the fill buffer holds; earlier units are reduced
  Count current_micro_ = 0, accum_steps_ = 1;
  bool synced_ = false;  // a reduction happened in this window
};

}  // namespace gaccum::comm
