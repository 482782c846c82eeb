// What: the training frameworks a data-parallel plan runs on, and which plans each one runs, in
//   one table (docs/DESIGN.md, "Frameworks"). A plan here is a gradient-sync strategy
//   (core/strategy.hpp) x a sharding, precision and offload (core/plan.hpp) over k accumulated
//   micro-steps:
//     ddp         torch DistributedDataParallel (+ ZeroRedundancyOptimizer for zero1):
//                 overlap = no_sync() on the first k-1 micro-steps; every-step = no no_sync()
//     fsdp        PyTorch FSDP (FullyShardedDataParallel): NO_SHARD, SHARD_GRAD_OP, FULL_SHARD,
//                 HYBRID_SHARD; overlap = no_sync() (unsharded gradients held over the window)
//     fsdp2       PyTorch fully_shard: reshard_after_forward False (zero2) / True (zero3), a 2-D
//                 mesh for hsdp; overlap = set_requires_gradient_sync(False) on k-1 micro-steps
//     deepspeed   DeepSpeed ZeRO stage 0-3 (MiCS mics_shard_size for hsdp): stages 0/1 reduce
//                 once at the accumulation boundary (fused; overlap with overlap_comm), stages
//                 2/3 reduce-scatter on every micro-step and refuse no_sync()
//     megatron    Megatron-LM / Megatron-Core DDP: gradients accumulate in main_grad buffers
//                 and are reduced once per batch (fused; overlap with --overlap-grad-reduce);
//                 zero1 is --use-distributed-optimizer
//     torchtitan  torchtitan (FSDP2 underneath): replicate / shard / hybrid degrees; its
//                 gradient accumulation reduces on every micro-batch
//     horovod     Horovod DistributedOptimizer: backward_passes_per_step=k (fused) or 1
//                 (every-step); no sharding
//   Layouts (tp, pp, cp): Megatron-LM runs tp, pp (1f1b, interleaved-1f1b; a split stage by
//   stage from --pipeline-model-parallel-layout, ends alone with one chunk per rank) and cp; torchtitan
//   tp, pp (gpipe, 1f1b, interleaved-1f1b) and cp; DeepSpeed's pipeline engine pp with 1f1b only
//   and ZeRO 0/1; DDP, FSDP, FSDP2 alone and Horovod none (torchtitan is FSDP2 with them).
//   At world_size 1 nothing is synchronised or sharded, so every framework runs every strategy;
//   at accum_steps 1 overlap and every-step are one run (no no_sync() window).
//   Activation checkpointing (torch.utils.checkpoint, deepspeed.checkpointing, Megatron's and
//   torchtitan's recompute) is open to all of them except per-op selective (checkpointing_refusal).
//   Megatron-LM and torchtitan build their own transformers (GPTModel, torchtitan's registry): a
//   profiled module of the user's own runs on the others (model_refusal).
// Why: a plan a framework refuses (DeepSpeed asserts on no_sync() under ZeRO 2/3) must never be
//      offered, compared against or suggested to a user of that framework; every place that
//      labels, filters or words a plan asks this one table (names, not strings).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan.hpp"
#include "core/strategy.hpp"

namespace gaccum {

enum class Framework { ddp, fsdp, fsdp2, deepspeed, megatron, torchtitan, horovod };

inline constexpr std::array<Framework, 7> kAllFrameworks{Framework::ddp,      Framework::fsdp,       Framework::fsdp2,
                                                         Framework::deepspeed, Framework::megatron, Framework::torchtitan,
                                                         Framework::horovod};

struct FrameworkTraits {
  Framework value;
  const char* name;     // flag / CSV / JSON spelling
  const char* display;  // how people write it
};
const FrameworkTraits& traits(Framework f);

// The plan as a framework sees it (model::Config's plan fields, without the batch).
struct FrameworkPlan {
  Strategy strategy = Strategy::overlap;
  ShardingChoice sharding;
  Precision precision = Precision::fp32;
  bool offload_optimizer = false;
  bool offload_params = false;
  Count world_size = 2;
  ParallelLayout layout;  // tensor / pipeline / context parallelism (dp only by default)
  Checkpointing checkpointing = Checkpointing::none;
  // Micro-steps per optimizer step. 1: no_sync() has no window, so overlap (reduce during the
  // last backward) and every-step are the same run and a framework running either runs both;
  // 0: not chosen yet (a search shape), the strategies stay apart.
  Count accum_steps = 0;
  // The model is the user's own torch.nn.Module (a profiled TorchScript file, MLP or CNN), not a
  // transformer the frameworks that define their own models (Megatron-LM, torchtitan) can build.
  bool own_module = false;
};

// nullopt: `f` runs the plan; else why not, one clause naming the framework's own rule, e.g.
// "DeepSpeed has no no_sync() under ZeRO stage 2/3 (it reduce-scatters on every micro-step)".
std::optional<std::string> framework_refusal(Framework f, const FrameworkPlan& p);
// The part of that rule about activation recomputation alone (any plan with checkpointing c).
std::optional<std::string> checkpointing_refusal(Framework f, Checkpointing c);
// The part about the model alone: Megatron-LM and torchtitan train their own model definitions,
// so a module of the user's own (FrameworkPlan::own_module) runs on the others only.
std::optional<std::string> model_refusal(Framework f, bool own_module);
inline bool framework_runs(Framework f, const FrameworkPlan& p) { return !framework_refusal(f, p); }

// The frameworks that run the plan, in kAllFrameworks order.
std::vector<Framework> frameworks_running(const FrameworkPlan& p);

// How `f` spells the plan (it must run it), e.g. "DeepSpeed ZeRO stage 2 (reduce-scatter every
// micro-step)", "FSDP FULL_SHARD + no_sync() on the first k-1 micro-steps".
std::string framework_setting(Framework f, const FrameworkPlan& p);

// How `f` recomputes n of the `chunk` layers of each of `chunks` model chunks (the rest keep their
// activations): Megatron-LM's block method (NeMo's too), torchtitan's 1 in every k layers
// (chunks 1 and k = chunk / n >= 2 only: it cannot say more), FSDP's checkpoint_wrapper on n x
// chunks blocks; nullopt where the framework cannot say it.
std::optional<std::string> partial_recompute_setting(Framework f, Count n, Count chunk, Count chunks);
// Those that come from a file `gaccum-tune check` reads back (Megatron-LM/NeMo args, torchtitan toml).
bool partial_recompute_in_file(Framework f);

// "ddp fsdp megatron" (names, space-separated; "" when none) and "DDP, FSDP, Megatron-LM".
// Megatron-LM's --pipeline-model-parallel-layout for a split given model stage by model stage
// (stage j = chunk c pp + rank r, as core/plan.hpp ParallelLayout::stage_layer_counts): 'E' the
// embedding on the first stage, 't' a transformer layer, 'L' the loss on the last, '|' between
// stages, runs of equal middle stages folded as Megatron-LM unrolls them: {20, 21, 20, 19} ->
// "Et*20|t*21|t*20|t*19L"; {7, 8 x 14, 7} -> "Et*7|(t*8|)*14t*7L".
std::string megatron_layout_text(const std::vector<Count>& stage_layers);
std::string framework_names(const std::vector<Framework>& fs);
std::string framework_displays(const std::vector<Framework>& fs);

std::string_view to_string(Framework f);
// ddp | pytorch-ddp, fsdp | fsdp1, fsdp2 | fully_shard, deepspeed | ds, megatron | megatron-lm |
// megatron-core, torchtitan, horovod (case-insensitive); InputError naming `field` otherwise.
Framework parse_framework(std::string_view text, std::string_view field = "--framework");

}  // namespace gaccum
