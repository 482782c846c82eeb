// What: the one place that knows what each plan (sharding x strategy x precision) keeps in memory
//       and which collectives it issues (docs/DESIGN.md, Sharded plans). Per rank, with N the shard
//       group size (p for zero1/2/3, G for hsdp:G) and R = p / N replicas (hsdp):
//
//   model states (Rajbhandari et al. 2020, "ZeRO", Sec. 5, mixed-precision Adam: K = 12):
//     weights      W (= 2 Psi bf16/fp16, 4 Psi fp32)            / N  from zero3
//     gradients    G (in the reduction dtype = the weights')    / N  from zero2, but only when the
//                  strategy reduce-scatters every micro-step; overlap and fused keep the full
//                  unsharded gradient across the window (FSDP no_sync) and the shard G / N it is
//                  reduce-scattered into (zero1 likewise): G + G / N
//     optimizer    O = 4 Psi x state slots + 4 Psi fp32 master (mixed precision) / N from zero1
//     => DDP 16 Psi, ZeRO-1 4 Psi + 12 Psi / N (+ 2 Psi / N), ZeRO-2 2 Psi + 14 Psi / N,
//        ZeRO-3 16 Psi / N
//     "/ N" of a flat layout (StateSizes::unit_params): each unit padded to a multiple of N,
//     shard = sum ceil(S_u / N) parameters; unsharded weights of zero1/zero2 are the padded flat
//     buffers, sum ceil(S_u / N) N parameters
//   working set    zero3/hsdp: kPrefetchUnits x the largest wrapped unit's parameters gathered
//                  (the unit computing + the one prefetched), at most every unit
//   offload        DeepSpeed offload_optimizer: optimizer state 0 on the device; offload_param
//                  (zero3): weights 0 on the device (the gathered working set stays); the PCIe
//                  transfers and the CPU optimizer step are not priced (step time: a lower bound)
//   comm buffers   DDP: G (bucket buffers); sharded: 2 x the largest (padded) unit's gradient
//                  (the unit being filled + the reduce-scatter's receive buffer); 0 at world_size 1
//
//   collectives per optimizer step (k micro-steps; "bucketed": issued as the backward produces
//   gradients, overlappable; "after": one message after the backward, exposed):
//     sharding  strategy    collectives
//     none      overlap     AR(G, p) bucketed in the last backward
//               fused       AR(G, p) after the last backward
//               every-step  AR(G, p) bucketed in every backward         (the common mistake)
//     zero1     overlap     RS(G, p) bucketed in the last backward + AG(W, p) after the step
//               fused       RS(G, p) after the last backward + AG(W, p) after the step
//               every-step  rejected: zero1 keeps full gradients, reducing every micro-step buys nothing
//     zero2     overlap     RS(G, p) bucketed in the last backward + AG(W, p) after the step
//               fused       RS(G, p) after the last backward       + AG(W, p) after the step
//               every-step  RS(G, p) bucketed in every backward    + AG(W, p) after the step
//     zero3     every micro-step: AG(W, p) per unit prefetched in forward and again in backward;
//               RS(G, p) per unit: in the last backward (overlap), after it (fused) or in every
//               backward (every-step)
//     hsdp:G    zero3 inside the group (AG, RS over N = G ranks) + AR(G / N, R) across groups
//               once per window (set_requires_all_reduce(False) on the first k-1 micro-steps): in
//               the last backward (overlap, every-step) or after it (fused)
//   Every phase's message is cut into its pieces (units, or buckets for zero1/zero2's gradients),
//   also after the backward and after the step (one collective per flat unit, as the runner does).
//   RS and AG of S bytes over n ranks cost half an allreduce of S over n ranks (ring: (n-1)
//   steps each, (n-1)/n S / busbw; nccl-tests' busbw factor (n-1)/n for both), at both levels of
//   the hierarchical model.
//   Rejected plans (plan_rejection): sharding at world_size 1, hsdp whose G does not divide p or
//   is not below it, zero1 + every-step.
// Why: the memory-versus-communication trade-off of sharded accumulation is decided by this table
//      alone; models price the collectives it lists and printers read the breakdown.
// Units: Bytes per rank; the collectives' message sizes in Bytes.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "model/prediction.hpp"

namespace gaccum::model {

inline constexpr Count kPrefetchUnits = 2;

// Full (unsharded) model-state sizes of one replica at one precision, and its wrapped units.
struct StateSizes {
  Bytes weights = 0;          // W: parameters in the compute dtype
  // Resident bytes beside the parameters (module buffers, a TorchScript file's tensor constants, as
  // a profile measures them): every rank holds them whole, in every plan. In MemoryBreakdown's weights.
  Bytes unsharded = 0;
  Bytes gradients = 0;        // G: gradients in the reduction dtype
  Bytes optimizer = 0;        // O: optimizer state + fp32 master weights
  Bytes largest_unit = 0;     // the largest wrapped unit's parameters (compute dtype)
  Bytes largest_unit_grad = 0;
  Count units = 1;            // wrapped units (zero3 gathers and reduce-scatters one at a time)
  Bytes bucket_buffers = 0;   // DDP's gradient bucket buffers (world_size > 1): G unless measured otherwise
  // Gradients accumulate in one contiguous buffer that the collectives reduce in place (Megatron-LM's
  // DDP: its buckets are views of the buffer; its distributed optimizer's shard is a view of the
  // reduce-scattered buffer): no bucket copies, no separate gradient shard under zero1 (the
  // framework's documented 6 + 12/d bytes per bf16 parameter).
  bool contiguous_grad_buffer = false;
  // The flat layout, where known (a profile: the units are its DDP buckets): parameters per unit
  // and in all. Each unit is padded to a multiple of N and sharded in N equal parts (the
  // runner's comm/sharded_sync.hpp), so shard and gathered sizes are exact. Empty: one flat
  // tensor padded as a whole, the largest unit from largest_unit / largest_unit_grad.
  std::vector<Count> unit_params;
  Count params = 0;
};

// Model-state bytes for Psi parameters at a precision with `slots` fp32 optimizer-state slots
// per parameter (adam 2, sgd momentum 1): W = e Psi, G = g Psi, O = (4 slots + 4 [mixed]) Psi,
// g the gradient's element bytes (0: e; 4 where a framework accumulates bf16 gradients in fp32,
// model/spec_model.hpp GradDtype).
StateSizes model_state_sizes(Count params, Precision precision, int slots, int grad_element_bytes = 0);

enum class CollectiveOp { allreduce, reduce_scatter, all_gather };
enum class CommGroup { world, shard, replica };  // p ranks; N consecutive ranks; R ranks N apart
enum class CommPhase {
  forward,          // prefetched per unit during a forward (zero3/hsdp parameter all-gather)
  backward,         // issued per bucket / unit during a backward, overlappable
  after_backward,   // one message after the last backward, exposed
  after_step,       // after the optimizer step, exposed (zero1/zero2 parameter all-gather)
};
const char* to_string(CollectiveOp op);

struct CollectiveUse {
  CollectiveOp op = CollectiveOp::allreduce;
  CommGroup group = CommGroup::world;
  CommPhase phase = CommPhase::backward;
  bool every_micro_step = false;  // else once per window (the last micro-step)
  bool parameters = false;        // message: the parameters (W); else the gradients (G)
  Count divisor = 1;              // message = W or G / divisor (hsdp's cross-group shard: N)
};

struct SyncPlan {
  CollectiveUse uses[4];
  int count = 0;
  bool gradient_every_micro_step = false;  // gradients reduced on every micro-step
  const CollectiveUse* begin() const { return uses; }
  const CollectiveUse* end() const { return uses + count; }
};

// Why a configuration's plan is rejected (no framework runs it), or nullopt.
std::optional<std::string> plan_rejection(const Config& c);
// The collectives of one optimizer step (sharding != none; DDP is priced by step_assembly.hpp).
SyncPlan sync_plan(const Config& c);
// Shard group size N and replicas R of a configuration.
Count shard_group(const Config& c);
Count replicas(const Config& c);
// Model-state, working-set and buffer bytes per rank (MemoryBreakdown without activations/peak).
MemoryBreakdown plan_memory(const Config& c, const StateSizes& s);

// Exposed time of C seconds of collectives issued over n equal pieces ahead of a phase of T
// seconds of compute that needs (forward all-gather) or produces (backward) them one at a time,
// each piece overlapping the compute of its neighbour (two-stage pipeline):
//   ideal   = C/n + max(0, C - T) (n - 1)/n        (c <= t: one piece exposed; else C - T + T/n)
//   exposed = ideal + (1 - e) (C - ideal)          (e: overlap efficiency, model/overlap.hpp,
//                                                   taken at 0 when negative: the sharded
//                                                   collectives never cost more than C, the
//                                                   blocking schedule the runner uses)
Seconds pipelined_exposure(Seconds comm, Seconds compute, Count pieces, double efficiency);

}  // namespace gaccum::model
