// What/why: the framework table of framework.hpp: which plans each framework runs and how it
// spells them. Each rule is a framework's own documented behaviour (docs/DESIGN.md, Frameworks).
#include "core/framework.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum {
namespace {

constexpr FrameworkTraits kFrameworks[] = {
    {Framework::ddp, "ddp", "DDP"},
    {Framework::fsdp, "fsdp", "FSDP"},
    {Framework::fsdp2, "fsdp2", "FSDP2"},
    {Framework::deepspeed, "deepspeed", "DeepSpeed"},
    {Framework::megatron, "megatron", "Megatron-LM"},
    {Framework::torchtitan, "torchtitan", "torchtitan"},
    {Framework::horovod, "horovod", "Horovod"},
};

bool sharded(Sharding s, std::initializer_list<Sharding> allowed) {
  return std::find(allowed.begin(), allowed.end(), s) != allowed.end();
}

}  // namespace

const FrameworkTraits& traits(Framework f) { return kFrameworks[static_cast<int>(f)]; }
std::string_view to_string(Framework f) { return traits(f).name; }

std::optional<std::string> checkpointing_refusal(Framework f, Checkpointing c) {
  // Per-op selective recompute is torch.utils.checkpoint's selective contexts (torchtitan's op
  // policy; a DDP/FSDP script can apply the same); these engines recompute their own way.
  if (c == Checkpointing::selective && f == Framework::torchtitan)
    return std::string("torchtitan has no attention-core selective recompute (its selective is per-op, selective-op, "
                       "or full recompute of every n-th layer)");
  if (c != Checkpointing::selective_op) return std::nullopt;
  if (f == Framework::deepspeed)
    return std::string("DeepSpeed's activation checkpointing recomputes whole layers, not per-op selective");
  if (f == Framework::megatron)
    return std::string("Megatron-LM's selective recompute is the attention core's, not per-op (torchtitan's op policy)");
  return std::nullopt;
}

std::optional<std::string> model_refusal(Framework f, bool own_module) {
  if (!own_module) return std::nullopt;
  if (f == Framework::megatron)
    return std::string("Megatron-LM trains its own model definitions (GPTModel), not a module of your own: use DDP, "
                       "FSDP or DeepSpeed, or give a transformer as --spec or --model-config to price it there");
  if (f == Framework::torchtitan)
    return std::string("torchtitan trains the models of its registry (a TrainSpec), not a module of your own: use "
                       "FSDP2, FSDP or DDP, or give a transformer as --spec or --model-config to price it there");
  return std::nullopt;
}

namespace {

// The table itself, strategy by strategy (framework_refusal adds the one-micro-step rule).
std::optional<std::string> table_refusal(Framework f, const FrameworkPlan& p) {
  const Sharding sh = p.sharding.sharding;
  const Strategy st = p.strategy;
  const bool single = p.world_size <= 1;  // nothing synchronised or sharded: any strategy is the same run
  const bool fp8 = p.precision == Precision::fp8;
  const bool offload = p.offload_optimizer || p.offload_params;
  const ParallelLayout& l = p.layout;
  if (auto why = checkpointing_refusal(f, p.checkpointing)) return why;
  if (auto why = model_refusal(f, p.own_module)) return why;
  if (!l.data_parallel_only()) {
    const char* name = traits(f).display;
    switch (f) {
      case Framework::ddp:
      case Framework::fsdp:
      case Framework::fsdp2:
      case Framework::horovod:
        return fmt::format("{} has no tensor or pipeline parallelism of its own ({} needs Megatron-LM or torchtitan; "
                           "pp alone also DeepSpeed's pipeline engine)",
                           name, to_string(l));
      case Framework::deepspeed:
        if (l.tp > 1 || l.cp > 1)
          return std::string("DeepSpeed's engine has no tensor or context parallelism of its own (Megatron-DeepSpeed "
                             "brings Megatron-LM's): tp/cp need Megatron-LM or torchtitan");
        if (l.schedule != Schedule::one_f_one_b)
          return fmt::format("DeepSpeed's pipeline engine runs 1F1B only (TrainSchedule), not {}", to_string(l.schedule));
        if (sharded(sh, {Sharding::zero2, Sharding::zero3, Sharding::hsdp}))
          return std::string("DeepSpeed refuses ZeRO-2 and ZeRO-3 with pipeline parallelism (\"ZeRO-2 and ZeRO-3 are "
                             "incompatible with pipeline parallelism\"): use ZeRO stage 0 or 1");
        break;
      case Framework::megatron:
        if (l.pp > 1 && (l.schedule == Schedule::gpipe || l.schedule == Schedule::zb_h1))
          return fmt::format("Megatron-LM schedules pipelines as 1F1B or interleaved 1F1B, not {}", to_string(l.schedule));
        if (l.pp > 1 && l.virtual_stages > 1 && (l.first_stage_layers > 0 || l.last_stage_layers > 0))
          return std::string("Megatron-LM's uneven first and last stages (--decoder-first/last-pipeline-num-layers) "
                             "spread over all of the rank's virtual chunks; one chunk of another size runs from its "
                             "--pipeline-model-parallel-layout: give every model stage's layers (--stage-layers with pp x v counts)");
        break;
      case Framework::torchtitan:
        if (l.pp > 1 && l.schedule == Schedule::zb_h1)
          return std::string("torchtitan's zero-bubble schedules are InterleavedZeroBubble and ZBVZeroBubble, not ZB-H1");
        if (l.pp > 1 && sh == Sharding::zero1) return std::string("torchtitan has no optimizer-only sharding (it shards with FSDP2)");
        if (l.pp > 1) {
          if (p.precision == Precision::fp16) return std::string("torchtitan trains in bf16 or fp32 (fp8 via torchao), not fp16");
          return std::nullopt;  // torch pipelining reduces once, after the last microbatch
        }
        break;
    }
  }
  switch (f) {
    case Framework::ddp:
      if (!single && !sharded(sh, {Sharding::none, Sharding::zero1}))
        return fmt::format("DDP replicates gradients and parameters ({} needs FSDP, FSDP2, torchtitan or DeepSpeed)",
                           to_string(p.sharding));
      if (!single && st == Strategy::fused)
        return std::string("DDP reduces from autograd hooks during backward (one allreduce after the last backward "
                           "is Horovod's backward_passes_per_step, DeepSpeed's or Megatron-LM's default)");
      if (fp8) return std::string("DDP has no fp8 training (TransformerEngine: Megatron-LM; torchao: FSDP2, torchtitan)");
      if (offload) return std::string("DDP keeps the optimizer state on the device (offload is DeepSpeed's or FSDP's)");
      return std::nullopt;
    case Framework::fsdp:
      if (!single && sh == Sharding::zero1)
        return std::string("FSDP has no optimizer-only sharding (zero1 is DDP + ZeroRedundancyOptimizer, DeepSpeed "
                           "stage 1 or Megatron-LM's distributed optimizer)");
      if (!single && st == Strategy::fused)
        return std::string("FSDP reduces from autograd hooks during backward (no single allreduce after it)");
      if (fp8) return std::string("FSDP has no fp8 training (torchao's float8 runs with FSDP2)");
      if (p.offload_optimizer && !p.offload_params)
        return std::string("FSDP offloads the parameters with the optimizer (CPUOffload(offload_params=True)), not "
                           "the optimizer alone");
      return std::nullopt;
    case Framework::fsdp2:
      if (!single && sharded(sh, {Sharding::none, Sharding::zero1}))
        return fmt::format("fully_shard shards gradients and parameters ({} is DDP's)", to_string(p.sharding));
      if (!single && st == Strategy::fused)
        return std::string("FSDP2 reduce-scatters from backward hooks (no single allreduce after backward)");
      if (p.offload_optimizer && !p.offload_params)
        return std::string("FSDP2 offloads the parameters with the optimizer (CPUOffloadPolicy), not the optimizer "
                           "alone");
      return std::nullopt;
    case Framework::deepspeed:
      if (!single && sharded(sh, {Sharding::zero2, Sharding::zero3, Sharding::hsdp}) && st != Strategy::every_step)
        return std::string("DeepSpeed has no no_sync() under ZeRO stage 2/3: it reduce-scatters the gradients into "
                           "their partitions on every micro-step (strategy every-step)");
      if (!single && sharded(sh, {Sharding::none, Sharding::zero1}) && st == Strategy::every_step)
        return std::string("DeepSpeed reduces gradients once, at the accumulation boundary, under ZeRO stage 0/1 (not "
                           "on every micro-step)");
      if (fp8) return std::string("DeepSpeed's engine has no fp8 training (TransformerEngine: Megatron-LM)");
      if (p.offload_optimizer && sh == Sharding::none)
        return std::string("DeepSpeed offloads the optimizer from ZeRO stage 1 on");
      if (p.offload_params && sh != Sharding::zero3)
        return std::string("DeepSpeed offloads the parameters at ZeRO stage 3 only");
      return std::nullopt;
    case Framework::megatron:
      if (!single && !sharded(sh, {Sharding::none, Sharding::zero1}))
        return fmt::format("Megatron-LM's data parallelism shards at most the optimizer state "
                           "(--use-distributed-optimizer); {} needs FSDP, FSDP2, torchtitan or DeepSpeed",
                           to_string(p.sharding));
      if (!single && st == Strategy::every_step)
        return std::string("Megatron-LM accumulates into its main_grad buffers and reduces once per batch (not on "
                           "every micro-batch)");
      if (offload) return std::string("Megatron-LM keeps the optimizer state on the device here (offload is DeepSpeed's or FSDP's)");
      return std::nullopt;
    case Framework::torchtitan:
      if (!single && sh == Sharding::zero1)
        return std::string("torchtitan has no optimizer-only sharding (it shards with FSDP2)");
      if (!single && st != Strategy::every_step)
        return std::string("torchtitan's gradient accumulation reduces on every micro-batch (strategy every-step)");
      if (p.precision == Precision::fp16) return std::string("torchtitan trains in bf16 or fp32 (fp8 via torchao), not fp16");
      if (p.offload_optimizer && !p.offload_params)
        return std::string("torchtitan offloads the parameters with the optimizer (FSDP2 CPUOffloadPolicy), not the "
                           "optimizer alone");
      return std::nullopt;
    case Framework::horovod:
      if (!single && sh != Sharding::none) return std::string("Horovod does not shard (no ZeRO / FSDP)");
      if (!single && st == Strategy::overlap)
        return std::string("Horovod has no no_sync(): it accumulates with backward_passes_per_step=k (strategy fused)");
      if (fp8) return std::string("Horovod has no fp8 training");
      if (offload) return std::string("Horovod keeps the optimizer state on the device");
      return std::nullopt;
  }
  return std::string("unknown framework");
}

// At accum_steps 1 the strategy the same run goes by in `f`'s table (overlap <-> every-step),
// or nullopt where the strategy is not one of the two or `f` runs it as named.
std::optional<Strategy> one_step_alias(Framework f, const FrameworkPlan& p) {
  if (p.accum_steps != 1 || (p.strategy != Strategy::overlap && p.strategy != Strategy::every_step)) return std::nullopt;
  if (!table_refusal(f, p)) return std::nullopt;
  FrameworkPlan q = p;
  q.strategy = p.strategy == Strategy::overlap ? Strategy::every_step : Strategy::overlap;
  if (table_refusal(f, q)) return std::nullopt;
  return q.strategy;
}

}  // namespace

std::optional<std::string> framework_refusal(Framework f, const FrameworkPlan& p) {
  if (one_step_alias(f, p)) return std::nullopt;
  return table_refusal(f, p);
}

std::vector<Framework> frameworks_running(const FrameworkPlan& p) {
  std::vector<Framework> out;
  for (Framework f : kAllFrameworks)
    if (framework_runs(f, p)) out.push_back(f);
  return out;
}

std::optional<std::string> partial_recompute_setting(Framework f, Count n, Count chunk, Count chunks) {
  switch (f) {
    case Framework::megatron:
      return fmt::format("Megatron-LM --recompute-granularity full --recompute-method block --recompute-num-layers {} "
                         "(NeMo: activations_checkpoint_method block, activations_checkpoint_num_layers {})",
                         n, n);
    case Framework::torchtitan: {
      const Count every = chunk / n;  // 1 in every k layers recomputes 1/k >= n/chunk
      if (chunks != 1 || every < 2) return std::nullopt;
      return fmt::format("torchtitan selective_ac_option = \"{}\" (1 in every {} layers, {:.0f}%)", every, every,
                         100.0 / double(every));
    }
    case Framework::fsdp:
    case Framework::fsdp2:
      return fmt::format("FSDP/FSDP2: checkpoint_wrapper on {} of the {} blocks (the check_fn of "
                         "apply_activation_checkpointing)",
                         n * chunks, chunk * chunks);
    default: return std::nullopt;
  }
}

bool partial_recompute_in_file(Framework f) { return f == Framework::megatron || f == Framework::torchtitan; }

std::string framework_setting(Framework f, const FrameworkPlan& p) {
  const Sharding sh = p.sharding.sharding;
  const Strategy st = one_step_alias(f, p).value_or(p.strategy);
  const bool one_step = p.accum_steps == 1;  // no no_sync() window to name
  const bool single = p.world_size <= 1;
  const std::string group = sh == Sharding::hsdp && p.sharding.group > 0 ? fmt::format(" {}", p.sharding.group) : "";
  switch (f) {
    case Framework::ddp:
      if (single) return "DDP (one rank)";
      return fmt::format("DDP{}{}", sh == Sharding::zero1 ? " + ZeroRedundancyOptimizer" : "",
                         one_step                ? ""
                         : st == Strategy::overlap ? " + no_sync() on the first k-1 micro-steps"
                                                   : " without no_sync()");
    case Framework::fsdp: {
      static const char* kName[] = {"NO_SHARD", "-", "SHARD_GRAD_OP", "FULL_SHARD", "HYBRID_SHARD"};
      if (single) return "FSDP (one rank)";
      return fmt::format("FSDP {}{}", kName[static_cast<int>(sh)],
                         st == Strategy::overlap && !one_step ? " + no_sync() on the first k-1 micro-steps" : "");
    }
    case Framework::fsdp2:
      if (single) return "fully_shard (one rank)";
      return fmt::format("fully_shard({}){}",
                         sh == Sharding::zero2   ? "reshard_after_forward=False"
                         : sh == Sharding::hsdp ? fmt::format("2-D mesh, shard group{}", group)
                                                 : std::string("reshard_after_forward=True"),
                         st == Strategy::overlap && !one_step
                             ? " + set_requires_gradient_sync(False) on the first k-1 micro-steps"
                             : "");
    case Framework::deepspeed: {
      if (single) return "DeepSpeed (one rank)";
      if (p.layout.pp > 1)
        return fmt::format("DeepSpeed PipelineModule(num_stages={}) + ZeRO stage {}", p.layout.pp, traits(sh).deepspeed);
      std::string s = sh == Sharding::hsdp ? fmt::format("DeepSpeed ZeRO stage 3 + mics_shard_size{}", group)
                                           : fmt::format("DeepSpeed ZeRO stage {}", traits(sh).deepspeed);
      if (st == Strategy::overlap) s += " + overlap_comm";
      if (p.offload_optimizer) s += " + offload_optimizer";
      if (p.offload_params) s += " + offload_param";
      return s;
    }
    case Framework::megatron: {
      if (single) return "Megatron-LM (one rank)";
      const ParallelLayout& l = p.layout;
      std::string dims;
      if (l.tp > 1) dims += fmt::format(" --tensor-model-parallel-size {}", l.tp);
      if (l.sequence_parallel) dims += " --sequence-parallel";
      if (l.pp > 1) dims += fmt::format(" --pipeline-model-parallel-size {}", l.pp);
      // A split stage by stage is Megatron-LM's --pipeline-model-parallel-layout, which sets v itself.
      if (l.pp > 1 && !l.stage_layer_counts.empty())
        dims += fmt::format(" --pipeline-model-parallel-layout '{}'", megatron_layout_text(l.stage_layer_counts));
      else if (l.pp > 1 && l.virtual_stages > 1)
        dims += fmt::format(" --virtual-pipeline-model-parallel-size {}", l.virtual_stages);
      if (l.pp > 1 && l.first_stage_layers > 0)
        dims += fmt::format(" --decoder-first-pipeline-num-layers {}", l.first_stage_layers);
      if (l.pp > 1 && l.last_stage_layers > 0)
        dims += fmt::format(" --decoder-last-pipeline-num-layers {}", l.last_stage_layers);
      if (l.cp > 1) dims += fmt::format(" --context-parallel-size {}", l.cp);
      return fmt::format("Megatron-LM{}{}{}", dims, sh == Sharding::zero1 ? " --use-distributed-optimizer" : "",
                         st == Strategy::overlap ? " --overlap-grad-reduce" : "");
    }
    case Framework::torchtitan: {
      if (single) return "torchtitan (one rank)";
      const ParallelLayout& l = p.layout;
      std::string dims;
      if (l.tp > 1) dims += fmt::format(", tensor_parallel_degree {}", l.tp);
      if (l.pp > 1)
        dims += fmt::format(", pipeline_parallel_degree {}, pipeline_parallel_schedule {}", l.pp, traits(l.schedule).torchtitan);
      // Stages torchtitan does not make from those alone (one per rank, Interleaved1F1B two, its
      // own split: kept stage by stage, or none): named module by module.
      if (l.pp > 1 && (l.virtual_stages != (traits(l.schedule).chunks ? 2 : 1) || l.first_stage_layers > 0 ||
                       l.last_stage_layers > 0))
        dims += fmt::format(", module_fqns_per_model_part ({} model stages)", l.pp * l.virtual_stages);
      if (l.cp > 1) dims += fmt::format(", context_parallel_degree {}", l.cp);
      return (sh == Sharding::none   ? std::string("torchtitan data_parallel_replicate_degree")
             : sh == Sharding::hsdp ? fmt::format("torchtitan data_parallel_shard_degree{} x replicate_degree", group)
             : sh == Sharding::zero2 ? std::string("torchtitan data_parallel_shard_degree, fsdp_reshard_after_forward never")
                                     : std::string("torchtitan data_parallel_shard_degree")) + dims;
    }
    case Framework::horovod:
      if (single) return "Horovod (one rank)";
      return st == Strategy::fused && !one_step ? "Horovod backward_passes_per_step=k" : "Horovod backward_passes_per_step=1";
  }
  return "";
}

std::string megatron_layout_text(const std::vector<Count>& stage_layers) {
  const std::size_t S = stage_layers.size();
  auto run = [](Count n) { return n == 1 ? std::string("t") : fmt::format("t*{}", n); };
  std::string out;
  for (std::size_t j = 0; j < S;) {
    const bool end = j == 0 || j + 1 == S;
    // Equal middle stages fold as "(t*n|)*k" (each keeps its '|'): never the first or last.
    std::size_t k = 1;
    if (!end)
      while (j + k + 1 < S && stage_layers[j + k] == stage_layers[j]) ++k;
    if (k > 1) {
      out += fmt::format("({}|)*{}", run(stage_layers[j]), k);
    } else {
      out += (j == 0 ? "E" : "") + run(stage_layers[j]) + (j + 1 == S ? "L" : "|");
    }
    j += k;
  }
  return out;
}

std::string framework_names(const std::vector<Framework>& fs) {
  std::string s;
  for (Framework f : fs) s += (s.empty() ? "" : " ") + std::string(traits(f).name);
  return s;
}

std::string framework_displays(const std::vector<Framework>& fs) {
  std::string s;
  for (Framework f : fs) s += (s.empty() ? "" : ", ") + std::string(traits(f).display);
  return s;
}

Framework parse_framework(std::string_view text, std::string_view field) {
  std::string t(text);
  for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& f : kFrameworks)
    if (t == f.name) return f.value;
  if (t == "pytorch-ddp") return Framework::ddp;
  if (t == "fsdp1") return Framework::fsdp;
  if (t == "fully_shard") return Framework::fsdp2;
  if (t == "ds") return Framework::deepspeed;
  if (t == "megatron-lm" || t == "megatron-core") return Framework::megatron;
  throw InputError(fmt::format("{}: unknown framework '{}': expected ddp, fsdp, fsdp2, deepspeed, megatron, torchtitan "
                               "or horovod",
                               field, text));
}

}  // namespace gaccum
