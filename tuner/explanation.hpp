// What: why a pick is where it is: the binding constraint (memory: the next larger micro_batch
//       would exceed the limit by X; divisibility; measured range; the whole per-rank batch; or
//       the objective itself), the step-time breakdown and exposed-communication share
//       (comm-bound when >= 25%), memory headroom, what the next-ranked config would change, how
//       world size trades off, and the price of `every-step` against `overlap` for this setting.
// Why: a recommendation that cannot say why is not trusted; every number here comes from the
//      same cost model predictions as the ranking.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/cost_model.hpp"
#include "tuner/pareto.hpp"
#include "tuner/search.hpp"

namespace gaccum::tuner {

inline constexpr double kCommBoundShare = 0.25;  // exposed comm / step_time at which a pick is comm-bound

// every-step (gradients reduced on every micro-step) against overlap (no_sync on the first k-1)
// for the same (micro_batch, accum_steps, world_size, plan). Under DDP every-step is the common
// mistake (same memory, k times the allreduces); under zero2/zero3/hsdp it is the memory choice
// (sharded gradients against the unsharded gradients no_sync keeps across the window).
struct StrategyPrice {
  bool applicable = false;  // world_size > 1 and both strategies exist for the plan
  Sharding sharding = Sharding::none;
  Bytes overlap_peak = 0, every_step_peak = 0;
  bool overlap_fits = true, every_step_fits = true;  // within the memory limit
  Seconds overlap_step = 0, fused_step = 0, every_step_step = 0;
  SamplesPerSecond overlap_throughput = 0, fused_throughput = 0, every_step_throughput = 0;
  Seconds extra_s = 0;         // every-step minus overlap, seconds per optimizer step
  double throughput_lost = 0;  // 1 - T(every-step) / T(overlap)
  Count overlap_collectives = 0, every_step_collectives = 0;
  std::string text;
};

struct Explanation {
  std::uint32_t candidate = 0;  // index into SearchResult::candidates
  Count rank = 0;
  std::string binding;  // memory | divisibility | measured-range | whole-batch | objective
  std::string binding_text;
  std::string breakdown_text;
  double comm_exposed_share = 0;  // comm_exposed / step_time
  bool comm_bound = false;
  std::string comm_text;
  // GPU compute model only (a --spec on a catalogue GPU): GEMM efficiency and MFU at this
  // micro_batch, the micro-step's time by kind of kernel, and what the neighbouring micro_batches
  // (the previous and next divisor) would give in efficiency, throughput and activation memory.
  std::string compute_text;
  // When the pick recomputes every layer because recomputing none does not fit (a --spec): the
  // fewest layers per model chunk recomputed that fit (model/recompute_mix.hpp), what that gains,
  // and how Megatron-LM, NeMo and torchtitan spell it; tune searches none/selective/full only.
  std::string recompute_text;
  // Where the communication terms come from per link level (measured / described), and, when the
  // pick spans nodes and exposed communication is >= 10% of the step, where the inter-node link
  // binds: the share at this accum_steps and the accum_steps that halves it (or brings it to 10%).
  std::string links_text;
  std::int64_t headroom = 0;         // limit - peak, bytes
  std::int64_t headroom_to_cap = 0;  // cap - peak, bytes
  std::string headroom_text;
  std::optional<std::uint32_t> runner_up;  // the next-ranked candidate
  double runner_up_delta = 0;              // (T(runner_up) - T(pick)) / T(pick)
  std::string runner_up_text;
  std::string world_size_text;
  StrategyPrice every_step;
  std::string plan_text;  // the plan and its memory terms, in words
};

// `limit` 0: no memory limit known (fits always true).
StrategyPrice price_every_step(const model::CostModel& model, const model::Config& config, Bytes limit = 0);

// "zero3 (parameters, gradients and optimizer state sharded), bf16, full activation checkpointing".
std::string plan_words(const model::Config& c);

// Which frameworks run the plan and how each spells it (core/framework.hpp), e.g. "runs on DDP +
// no_sync() on the first k-1 micro-steps; FSDP NO_SHARD + no_sync() ...; Megatron-LM
// --overlap-grad-reduce"; with the job's framework known, "run as: DeepSpeed ZeRO stage 2";
// "" at world_size 1 without a framework (every framework runs it).
std::string runs_on_text(const model::Prediction& p, std::optional<Framework> framework = std::nullopt);

Explanation explain(const model::CostModel& model, const SearchResult& result, const std::vector<ParetoPoint>& pareto,
                    std::size_t rank_index, double margin);

// "b=32 k=8 p=2 overlap", plus " zero3 bf16 ckpt=full" for a non-default plan
std::string short_config(const model::Config& c);

}  // namespace gaccum::tuner
