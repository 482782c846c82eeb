// What: what the user asks the tuner for: a global batch target (exact or a range), the allowed
//       world sizes, a memory cap with a safety margin, accumulation and strategy limits, the
//       ranking objective, and the inputs of the learning-rate and critical-batch guidance.
// Why: one plain value that `tune`, the reports (JSON "inputs") and the tests share; the CLI
//      only parses flags into it. Limits resolves it against a cost model's ModelInfo.
// Units: global batches and micro-batches in samples; memory in Bytes; margin a fraction.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/framework.hpp"
#include "core/optimizer.hpp"
#include "core/parse.hpp"
#include "core/plan.hpp"
#include "core/strategy.hpp"
#include "core/units.hpp"
#include "model/cost_model.hpp"

namespace gaccum::tuner {

// throughput: max samples/s. cost: min GPU-seconds per sample (= world_size / throughput).
// time_to_target: min (1 + B_noise/B) x step_time, the wall time per S_min optimizer steps
// (McCandlish et al. 2018; see objective_value()).
enum class Objective { throughput, cost, time_to_target };
std::string_view to_string(Objective o);  // "throughput", "cost", "time-to-target"
Objective parse_objective(std::string_view text, std::string_view field = "--objective");

// A learning rate known to work at a global batch: "3e-4@256".
struct LrReference {
  double lr = 0;
  Count global_batch = 0;
};
LrReference parse_lr_reference(std::string_view text, std::string_view field = "--lr-ref");

struct TuneRequest {
  Count global_batch_min = 0;  // == global_batch_max for an exact target
  Count global_batch_max = 0;
  std::vector<Count> world_sizes;  // allowed data-parallel sizes
  MemoryCap memory_cap{std::nullopt, 1.0};  // the device (as check); the margin is the safety
  double margin = 0.10;  // peak memory must stay <= cap x (1 - margin)
  Count max_accum_steps = 64;
  std::optional<Strategy> strategy;  // nullopt: auto (rank overlap and fused; price every-step)
  // The plan axes; nullopt: search what the model offers (ModelInfo::plans auto_*).
  std::optional<ShardingChoice> sharding;  // hsdp with group 0: the model's GPUs per node
  std::optional<Precision> precision;
  std::optional<Checkpointing> checkpointing;
  // Pins a config file may set (tune --deepspeed-config: train_micro_batch_size_per_gpu,
  // gradient_accumulation_steps); nullopt: searched.
  std::optional<Count> micro_batch;
  std::optional<Count> accum_steps;
  // The framework the job runs on (--framework, or a DeepSpeed config): only plans it runs are
  // searched, compared and suggested (core/framework.hpp); nullopt: every plan, each labelled
  // with the frameworks that run it.
  std::optional<Framework> framework;
  std::string framework_source;  // e.g. "flag --framework", "deepspeed ds.json"
  bool offload_optimizer = false;  // DeepSpeed offload_optimizer (model/prediction.hpp Config)
  bool offload_params = false;     // DeepSpeed offload_param
  // The tensor/pipeline/context-parallel layouts searched (--tp, --pp, ... or `auto`: a model's
  // ModelInfo::plans.layout_candidates); empty: data parallel only. A world size runs the layouts
  // whose tp pp cp divides it; accum_steps is then the pipeline's microbatch count.
  std::vector<ParallelLayout> layouts;
  bool allow_cap_above_device = false;  // --memory-cap above the device's memory (--force-memory-cap)
  bool allow_extrapolation = false;  // accept micro_batch above the measured range
  Objective objective = Objective::throughput;
  std::optional<double> noise_scale;  // B_noise override (samples); else ModelInfo::noise_scale
  std::string noise_scale_source;     // where the override came from, e.g. "flag --noise-scale"
  // How to measure B_noise when none is known: a `gaccum-tune validate` command without
  // -b/-k/-p (the critical-batch advice appends the best pick's); "" to say only --noise-scale.
  std::string noise_scale_hint;
  double cost_per_device_hour = 0;    // > 0: also price configs in currency per sample
  std::optional<LrReference> lr_reference;
  Optimizer optimizer = Optimizer::adam;  // for the LR rule (core/optimizer.hpp)
  std::optional<Count> dataset_size;  // samples per epoch, for warm-up steps
  Count top = 10;                     // picks explained and shown
  // Refuse a search of more candidates (InputError with the fix); 0: no limit. `tune` sets it:
  // its JSON and HTML hold every row (~8 KB of memory each while written).
  std::size_t max_candidates = 0;
  std::vector<std::string> notes;     // the caller's, e.g. what a DeepSpeed config pinned (reports' notes)

  bool exact() const { return global_batch_min == global_batch_max; }
};

// Checks every field (InputError naming the flag) and sorts/deduplicates world_sizes.
void validate(TuneRequest& r);

// 1, 2, ..., n.
std::vector<Count> world_sizes_up_to(Count n);

// cap x (1 - margin), rounded down, exact for margins given to 1e-6 (integer arithmetic, so a
// peak equal to the limit is inside it on every platform).
Bytes apply_margin(Bytes cap, double margin);

// The request resolved against a model: what the search enforces.
struct Limits {
  Bytes device_memory = 0;
  Bytes cap = 0;    // resolved --memory-cap
  Bytes limit = 0;  // apply_margin(cap, margin)
  Count max_accum_steps = 0;
  Count micro_batch_limit = 0;        // 0: none; else the measured maximum (no extrapolation)
  Count min_micro_batch = 1;          // the model raises below it (ModelInfo::min_micro_batch)
  std::string min_micro_batch_reason;
  std::vector<Count> world_sizes;     // allowed and within ModelInfo::max_world_size
  std::vector<Strategy> ranked;       // strategies that may be picked under DDP / zero1
  std::vector<Strategy> evaluated;    // ranked + priced-only (every-step under auto)
  std::vector<ShardingChoice> shardings;         // plan axes searched
  std::vector<Precision> precisions;
  std::vector<Checkpointing> checkpointings;
  bool strategy_pinned = false;
  std::optional<Framework> framework;  // TuneRequest::framework
  std::optional<double> noise_scale;  // request override or ModelInfo::noise_scale
  std::string noise_scale_source;     // the request's source, or "the profile's gradient statistics"
  bool offload_optimizer = false, offload_params = false;  // every plan shape carries them
  std::vector<ParallelLayout> layouts{ParallelLayout{}};  // searched (TuneRequest::layouts)
  bool data_parallel_only() const { return layouts.size() == 1 && layouts.front().data_parallel_only(); }
  std::vector<std::string> notes;     // e.g. world sizes dropped by the cluster size
};
Limits resolve_limits(const model::ModelInfo& info, const TuneRequest& r);

// May `s` be picked under `sharding`? Under --strategy auto: overlap and fused everywhere, and
// every-step too where it buys memory (zero2, zero3, hsdp: sharded gradients) or where the
// framework runs nothing else (torchtitan); DDP's and zero1's every-step is priced, not ranked.
// A pinned strategy is always rankable.
bool strategy_rankable(const Limits& l, Strategy s, Sharding sharding);

// Every plan shape the limits allow at world_size p (micro_batch = accum_steps = 1), the
// rejected ones (model/plan_cost.hpp plan_rejection) and those the framework refuses left out;
// ranked_only: rankable strategies.
// With a layout: shapes carry it (world_size a multiple of its tp pp cp, every-step left out
// under a pipeline, the data-parallel part checked over dp).
std::vector<model::Config> plan_shapes(const Limits& l, Count world_size, bool ranked_only,
                                       const ParallelLayout& layout = ParallelLayout{});

}  // namespace gaccum::tuner
