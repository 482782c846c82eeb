// What: the cost model's vocabulary: a configuration (micro_batch, accum_steps, world_size,
//       strategy, and the plan: sharding, precision, activation checkpointing; core/plan.hpp)
//       and its prediction (step-time breakdown, throughput, peak memory breakdown).
// Why: plain value types that the tuner, reports, check and the runner's "predicted vs
//      measured" all share; no allocation, so the tuner can evaluate millions per second.
// Units: Seconds per optimizer step, Bytes per rank, samples/s.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/framework.hpp"
#include "core/plan.hpp"
#include "core/strategy.hpp"
#include "core/units.hpp"

namespace gaccum::model {

struct Config {
  Config() = default;
  Config(Count b, Count k, Count p, Strategy s = Strategy::overlap)
      : micro_batch(b), accum_steps(k), world_size(p), strategy(s) {}
  Count micro_batch = 1;   // b: samples per forward/backward on one rank
  Count accum_steps = 1;   // k: micro-batches per optimizer step on one rank
  Count world_size = 1;    // p: GPUs (ranks) in all: tp pp cp x the data-parallel size dp
  Strategy strategy = Strategy::overlap;
  ShardingChoice sharding;                     // none = DDP; hsdp carries its group size G
  std::optional<Precision> precision;          // nullopt: the model's own (ModelInfo::plans)
  std::optional<Checkpointing> checkpointing;  // nullopt: the model's own
  bool offload_optimizer = false;  // DeepSpeed offload_optimizer: optimizer state + master weights off the device
  bool offload_params = false;     // DeepSpeed offload_param (zero3): the parameter shard off the device
  ParallelLayout layout;           // tensor / pipeline / context parallelism (core/plan.hpp); dp only by default
  // dp: the ranks that hold the same model part and reduce its gradients (world_size when the
  // layout is data parallel only).
  Count data_parallel() const { return world_size / layout.model_parallel(); }
  // B = b k dp: with a pipeline, k is the microbatch count m of one pipeline per step.
  Count global_batch() const { return micro_batch * accum_steps * data_parallel(); }
};

// The plan as the framework table sees it (core/framework.hpp); a precision left to the model
// counts as fp32 there (only fp8 and fp16 narrow the frameworks, and a model's own is neither).
inline FrameworkPlan framework_plan(const Config& c) {
  return FrameworkPlan{c.strategy,       c.sharding,   c.precision.value_or(Precision::fp32),         c.offload_optimizer,
                       c.offload_params, c.world_size, c.layout, c.checkpointing.value_or(Checkpointing::none),
                       c.accum_steps};
}
// A search shape, before its accum_steps is chosen (the strategies stay apart).
inline FrameworkPlan framework_plan_any_k(const Config& c) {
  FrameworkPlan p = framework_plan(c);
  p.accum_steps = 0;
  return p;
}

struct StepBreakdown {
  Seconds compute = 0;       // k x t(b): forward + loss + backward of every micro-step
  Seconds comm_total = 0;    // all allreduce time issued during the step (hidden or not)
  Seconds comm_exposed = 0;  // the part of comm_total not hidden behind backward
  Seconds optimizer = 0;     // zero_grad + optimizer step
  Seconds bubble = 0;        // pipeline plans: the critical rank's idle time inside the schedule
  Seconds step_time = 0;     // compute + comm_exposed + bubble + optimizer
};

// Predicted byte counts saturate here (an exabyte): a peak at or above it is not a number any
// device holds, and the CLI says so instead of printing it.
inline constexpr Bytes kMaxPredictedBytes = Bytes(1) << 60;

struct MemoryBreakdown {
  Bytes weights = 0;         // this rank's parameters (a 1/N shard under zero3/hsdp)
  Bytes gradients = 0;       // this rank's gradients (a shard when reduce-scattered in every backward)
  Bytes optimizer_state = 0; // optimizer state + fp32 master weights (mixed precision), sharded from zero1
  Bytes gathered = 0;        // zero3/hsdp: all-gathered parameters of the units in use (prefetch included)
  Bytes comm_buffers = 0;    // gradient buckets / fusion buffer (0 when world_size == 1)
  Bytes activations = 0;     // peak above the static part, a function of micro_batch only
  // A sharded plan's optimizer step: what its temporaries over the largest flat shard rise above
  // activations + gathered (the step's peak above the window's), else 0.
  Bytes optimizer_step = 0;
  Bytes allocator_reserve = 0;  // GPU model only: what the CUDA caching allocator holds beyond the
                                // allocated bytes (the largest transient block, freed and cached
                                // while the next is allocated), so that peak compares with
                                // torch.cuda.max_memory_reserved (what OOMs); 0 on CPU profiles
  Bytes peak = 0;            // per rank: the sum of the terms above
  Bytes allocated() const { return peak - allocator_reserve; }  // compares with max_memory_allocated
  // Where in the window the peak falls, when the profile measured its phases and the plan
  // gathers one unit at a time (zero3/hsdp of a staged model), e.g. "block 8's backward, block 8
  // and block 7 gathered"; empty otherwise.
  std::string peak_phase;
};

// Where a prediction's allreduce times came from.
enum class CommSource {
  none,          // world_size 1: no communication
  measured,      // the profile's allreduce measurements at this world_size (interpolated between sizes)
  ring_fit,      // the ring model with (alpha, beta) fitted on the profile at another world_size
  hierarchical,  // the hierarchical model of a cluster description (intra- then inter-node)
  allreduce_derived,  // sharded plans on a profile: reduce-scatter / all-gather priced as half the
                      // measured allreduce of the same size (ring: RS + AG = AR), not measured
};
inline const char* to_string(CommSource s) {
  switch (s) {
    case CommSource::none: return "none";
    case CommSource::measured: return "measured";
    case CommSource::ring_fit: return "ring-fit";
    case CommSource::hierarchical: return "hierarchical";
    case CommSource::allreduce_derived: return "allreduce-derived";
  }
  return "none";
}

// Where one link level of a prediction's communication comes from: `none` when the job does not
// use that level (world_size 1; one node has no inter-node link), `measured` (the profile's own
// collectives, or a cluster level fitted from measurements: `gaccum-tune cluster fit`),
// `described` (a cluster file's hand-written numbers).
enum class LinkSource : std::uint8_t { none, measured, described };
inline const char* to_string(LinkSource s) {
  switch (s) {
    case LinkSource::none: return "none";
    case LinkSource::measured: return "measured";
    case LinkSource::described: return "described";
  }
  return "none";
}
// "intra measured, inter described" / "intra measured" / "none".
std::string link_sources_text(LinkSource intra, LinkSource inter);

// How the GPU compute model (model/gpu_compute.hpp) priced one micro-step; gpu_model false on
// the profile path and under a flat --mfu.
struct ComputeDetail {
  bool gpu_model = false;
  double gemm_efficiency = 0;   // GEMM FLOP/s achieved over the device's peak, forward and backward
  double mfu = 0;               // model FLOPs (6 N T + 12 L s^2 h per sample, no recompute) over the
                                // peak, for the whole step (communication and optimizer included)
  double flops_per_micro_step = 0;  // executed (recompute included)
  double model_flops_per_s = 0;     // the model FLOPs of mfu's count per second of the step, one GPU
  Seconds gemm = 0, attention = 0, memory_bound = 0, overhead = 0;  // one micro-step's time by kind
};

// One pipeline rank's share of a tensor/pipeline-parallel plan (model/parallel_cost.hpp).
struct StageDetail {
  Count rank = 0;            // pipeline rank r in [0, pp)
  Count layers = 0;          // transformer layers on this rank (all its chunks)
  bool embedding = false, head = false;
  Seconds busy = 0;          // forward/backward seconds of one step's schedule on this rank
  Seconds idle = 0;          // waiting inside the schedule (its share of the bubble)
  Count in_flight = 0;       // peak microbatch chunks whose activations are held at once
  MemoryBreakdown memory;
};

// What a tensor/pipeline-parallel plan adds to a prediction (empty for data-parallel plans).
struct ParallelDetail {
  double bubble_fraction = 0;  // idle share of the pipeline's schedule, averaged over the ranks
  Seconds pipeline = 0;        // the schedule's makespan (forwards, backwards, P2P, bubble)
  Seconds tp_comm = 0;         // tensor-parallel collectives per step on one rank (inside `pipeline`)
  Seconds cp_comm = 0;         // context-parallel K/V exchange per step on one rank (inside `pipeline`)
  Seconds p2p = 0;             // one stage-boundary send (activations of one microbatch)
  Seconds dp_comm = 0;         // data-parallel gradient reduction after the schedule (exposed)
  Count peak_stage = 0;        // the pipeline rank with the highest peak memory
  std::vector<StageDetail> stages;  // one per pipeline rank (pp >= 1 when the layout is not dp only)
};

struct Prediction {
  Config config;
  ParallelDetail parallel;
  ComputeDetail compute;
  StepBreakdown time;
  Seconds step_time_lo = 0;  // band: the step priced at the ends of the measured medians' 95% intervals
                             // (where the median step of a run should land if the machine behaves
                             // as it did while profiling)
  Seconds step_time_hi = 0;
  SamplesPerSecond throughput = 0;   // global_batch / step_time
  double tokens_per_s = 0;           // real tokens/s for sequence workloads, else 0
  MemoryBreakdown memory;
  Count collectives_per_step = 0;    // collective calls (allreduce, reduce-scatter, all-gather) per
                                     // optimizer step on each rank
  Count gradient_syncs = 0;          // micro-steps per optimizer step that reduce gradients
  bool extrapolated = false;         // micro_batch or world_size beyond what was measured
  bool micro_batch_extrapolated = false;  // micro_batch above the largest measured one
  bool world_size_extrapolated = false;   // world_size above the largest profiled rank count
  CommSource comm_source = CommSource::none;
  LinkSource intra_link = LinkSource::none;  // the intra-node level of the communication terms
  LinkSource inter_link = LinkSource::none;  // the inter-node level (none inside one node)
  double overlap_efficiency = 1;     // fraction of ideally overlappable comm the backward hides
  // The profile's unconfirmed measurements (core/profile.hpp UnconfirmedMeasurement::what) this
  // prediction is priced from: its compute points, its rank groups' optimizer and collectives.
  // Empty: every number it rests on was confirmed (or it is an analytic prediction).
  std::vector<std::string> unconfirmed;
  bool own_module = false;  // priced from a module of the user's own (PlanSupport::own_module)
  // No framework named: the framework whose costs priced a plan only it runs (a tensor/pipeline
  // layout Megatron-LM or torchtitan runs: model/spec_model.hpp make_spec_model_any_framework).
  std::optional<Framework> priced_as;
};

// The plan a prediction priced, as the framework table sees it (with the model's kind).
inline FrameworkPlan framework_plan(const Prediction& p) {
  FrameworkPlan f = framework_plan(p.config);
  f.own_module = p.own_module;
  return f;
}

}  // namespace gaccum::model
