// What: the rules of a tensor/pipeline/context-parallel layout (core/plan.hpp ParallelLayout)
//       on a transformer, and where its layers go (docs/DESIGN.md, Pipeline plans).
//   ranks        world_size = tp pp cp dp, placed tp fastest, then cp, then dp, then pp
//                (Megatron-LM's order): a tp group is tp consecutive ranks, a dp group's ranks
//                are tp cp apart, pipeline neighbours tp cp dp apart
//   layers       model stage j = c pp + r (chunk c of pipeline rank r) runs layers_of(j) layers:
//                even (L / (pp v) each), or first/last stage given (Megatron-LM's
//                --decoder-first/last-pipeline-num-layers with v = 1) and the rest even over the
//                middle stages, or every stage given (torchtitan's own split, torchtitan_split)
//   rejections   each names the fix: world_size a multiple of tp pp cp; heads, kv_heads and
//                ffn_hidden multiples of tp; tp within one node (its collectives run on every
//                layer); sequence parallelism needs tp >= 2; the sequence a multiple of 2 cp
//                (the causal load-balanced split); layers divisible as above; the schedule's
//                own rules (model/pipeline.hpp schedule_rejection); a pipeline reduces
//                gradients once per step (no every-step strategy); no DeepSpeed offload with a
//                layout; the data-parallel part (sharding over dp) as plan_rejection says
// Why: one place decides whether a layout runs at all; the cost model, the tuner and check ask it.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "model/prediction.hpp"
#include "model/transformer.hpp"

namespace gaccum::model {

// Why this layout cannot run the model on this cluster (gpus_per_node 0: unknown), or nullopt.
std::optional<std::string> layout_rejection(const Config& c, const TransformerShape& t, Count gpus_per_node);
// The tensor-parallel collectives of one transformer layer and one microbatch (Megatron-LM's f
// and g regions): 2 forward (after attention's and the MLP's row-parallel matmuls) and 2 backward
// (before their column-parallel inputs), 2 more backward under full recompute (the recomputed
// forward's). Each is an allreduce of b s h / cp elements, or with sequence parallelism a
// reduce-scatter and an all-gather of that volume (one of each per count).
struct TpLayerCollectives {
  Count forward = 0, backward = 0;
};
constexpr TpLayerCollectives tp_layer_collectives(Checkpointing ckpt) {
  // selective-op recomputes the output projection and the MLP's reduction output (wo is an even
  // matmul; the allreduce after w2 is not kept), so its backward runs both forward collectives
  // again, as full recompute does.
  return TpLayerCollectives{2, ckpt == Checkpointing::full || ckpt == Checkpointing::selective_op ? 4 : 2};
}

// Layers of each model stage, [chunk * pp + rank]; InputError when they do not divide.
std::vector<Count> stage_layers(const ParallelLayout& l, Count layers);

// How torchtitan splits `layers` over `stages` model stages when no split is given (its pipeline
// builder's generate_llm_fqn_per_model_part): the token embedding counts as `first_less` layers
// and the norm + output as `last_less` (its pipeline_parallel_first/last_stage_less_layers,
// default 1 each); the L + first_less + last_less effective layers go L' / S to each stage, one
// more to each of the first L' mod S; the first stage then holds first_less fewer transformer
// layers, the last last_less fewer. Llama 3 405B's 126 layers: 16 stages -> 7, 8 x 14, 7; 8 ->
// 15, 16 x 6, 15; Llama 3 70B's 80 on 4 stages -> 20, 21, 20, 19; 32 on 2 -> 16, 16.
std::vector<Count> torchtitan_split(Count layers, Count stages, Count first_less = 1, Count last_less = 1);
// Why torchtitan refuses that split (its own checks: more stages than effective layers, a stage
// left empty, a weight above the layers per stage), or nullopt.
std::optional<std::string> torchtitan_split_rejection(Count layers, Count stages, Count first_less = 1,
                                                      Count last_less = 1);
// The stages torchtitan builds from pipeline_parallel_layers_per_stage (ceil((layers + first_less +
// last_less) / per)); InputError with torchtitan's reason when they do not divide over pp.
Count torchtitan_stages(Count layers, Count per_stage, Count pp, Count first_less = 1, Count last_less = 1);
// How Megatron-LM splits `layers` over pp x v model stages under
// --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split (Megatron-Core's
// TransformerConfig account_for_embedding/loss_in_pipeline_split): the embedding and the loss
// count as one layer each, the L + e + l layers go (L + e + l) / (pp v) to every model stage, and
// the first stage (rank 0's first chunk) holds one transformer layer fewer for the embedding, the
// last (the last rank's last chunk) one fewer for the loss. Megatron-LM refuses L + e + l not a
// multiple of pp, and (L + e + l) / pp not a multiple of v; a stage left without a transformer
// layer is refused here (not priced). Llama 3 70B's 80 layers on pp 6 with both: 13, 14 x 4, 13.
std::vector<Count> megatron_account_split(Count layers, Count pp, Count virtual_stages, bool embedding, bool loss);
// A split as --stage-layers spells it: "FIRST,...,LAST" when the middle stages are equal (126
// layers over 16 stages with ends of 7 -> "7,...,7"), every count otherwise ("20,21,20,19").
std::string stage_layers_text(const std::vector<Count>& counts);
// The layouts a search may choose from on this model and node size (PlanSupport::
// layout_candidates), data-parallel first.
std::vector<ParallelLayout> candidate_layouts(const TransformerShape& t, Count gpus_per_node, Count max_gpus);

// The microbatch count at which a plan's peak memory is priced for a given m: 1 without a pipeline
// (memory does not depend on accumulation); pp for 1F1B and ZB-H1 (in flight saturates at m >=
// pp); for interleaved 1F1B the least multiple of pp whose m v chunks cover rank 0's warm-up, 2
// (pp - 1) + (v - 1) pp chunks + 1 (at m = pp they do not: pp 4, v 5 holds 20 chunks at m 4, 23
// from m 8), and m if smaller; m itself for gpipe (every microbatch held).
inline Count memory_accum_steps(const ParallelLayout& l, Count m) {
  if (l.pp < 2) return 1;
  if (l.schedule == Schedule::gpipe) return std::max<Count>(1, m);
  if (l.schedule == Schedule::interleaved_1f1b && l.virtual_stages > 1) {
    const Count v = l.virtual_stages, chunks = 2 * (l.pp - 1) + (v - 1) * l.pp + 1;
    const Count saturated = ((chunks + v - 1) / v + l.pp - 1) / l.pp * l.pp;
    return std::max(l.pp, std::min(std::max<Count>(1, m), saturated));
  }
  return l.pp;
}

// The gradient group's view of a layout's configuration (what plan_cost.hpp prices for one model
// part): world_size = dp x cp, layout dp only. Context-parallel ranks hold the same weights and
// split the sequence, so their gradients are reduced, and a sharded plan's state sharded, over dp
// x cp ranks (Megatron-Core's data-parallel group with context parallelism; torchtitan's FSDP
// over its dp_shard_cp mesh). Its global_batch() is not the job's: samples come from dp ranks.
Config data_parallel_view(const Config& c);

}  // namespace gaccum::model
