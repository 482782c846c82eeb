// What/why: see layout_flags.hpp.
#include "cli/layout_flags.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/checked.hpp"
#include "core/parse.hpp"

namespace gaccum::cli {

void add_layout_flags(CLI::App* sub, LayoutFlags& f) {
  sub->add_option("--tp", f.tp, "tensor-parallel ranks per layer (within a node) [default: 1]");
  sub->add_option("--pp", f.pp, "pipeline stages; accumulation steps are its microbatches [default: 1]");
  sub->add_option("--cp", f.cp, "context-parallel ranks (the sequence split) [default: 1]");
  sub->add_option("--virtual-stages", f.virtual_stages, "chunks of layers per pipeline rank (interleaved-1f1b) [default: 1]");
  sub->add_option("--schedule", f.schedule, "pipeline schedule: gpipe | 1f1b | interleaved-1f1b | zb-h1 [default: 1f1b]");
  sub->add_flag("--sequence-parallel", f.sequence_parallel, "split norms and dropout along the sequence over the tp ranks");
  sub->add_option("--stage-layers", f.stage_layers,
                  "layers per model stage, e.g. 7,9,9,7, or FIRST,...,LAST (only the first and last may differ; with "
                  "--virtual-stages v, pp x v stages, rank 0's first chunk first) [default: even]");
}

namespace {

ParallelLayout parse_layout(const LayoutFlags& f, bool allow_auto) {
  ParallelLayout l;
  const auto count = [&](const std::string& text, const char* flag) {
    if (text == "auto") {
      if (!allow_auto)
        throw InputError(fmt::format("{} auto: only tune searches a layout; give a number (e.g. {} 8)", flag, flag));
      return Count(1);
    }
    return text.empty() ? Count(1) : parse_count_at_most(text, flag, Count(1) << 20, "2^20");
  };
  l.tp = count(f.tp, "--tp");
  l.pp = count(f.pp, "--pp");
  l.cp = count(f.cp, "--cp");
  l.virtual_stages = count(f.virtual_stages, "--virtual-stages");
  l.sequence_parallel = f.sequence_parallel;
  if (!f.schedule.empty())
    l.schedule = parse_schedule(f.schedule, "--schedule");
  else
    l.schedule = default_schedule(l.virtual_stages);
  if (!f.schedule.empty() && l.pp < 2 && f.pp != "auto")
    throw InputError("--schedule: a schedule needs --pp 2 or more (one stage has nothing to schedule)");
  if (!f.stage_layers.empty() && f.pp == "auto")
    throw InputError("--stage-layers: give --pp N with it (a searched pp has no fixed stage count)");
  if (!f.stage_layers.empty() && f.virtual_stages == "auto")
    throw InputError("--stage-layers: give --virtual-stages N with it (a searched v has no fixed stage count)");
  if (!f.stage_layers.empty()) {
    set_stage_layers(l, f.stage_layers, "--stage-layers");
    // Every model stage given with virtual stages: kept stage by stage, as given (Megatron-LM runs
    // it from --pipeline-model-parallel-layout; its first/last flags would spread over the chunks).
    if (l.virtual_stages > 1 && l.stage_layer_counts.empty() && f.stage_layers.find(",...,") == std::string::npos) {
      l.stage_layer_counts = parse_count_list(f.stage_layers, "--stage-layers");
      l.first_stage_layers = l.last_stage_layers = 0;
    }
  }
  return l;
}

}  // namespace

ParallelLayout layout_from_flags(const LayoutFlags& f) { return parse_layout(f, false); }

void add_framework_config_flags(CLI::App* sub, FrameworkConfigFlags& f, const std::string& what, bool trainer_files) {
  sub->add_option("--megatron-args", f.megatron_args, "Megatron-LM arguments (a command line or arguments file): " + what);
  sub->add_option("--nemo-config", f.nemo_config, "NeMo / Megatron-Bridge YAML (model: and trainer: fields): " + what);
  sub->add_option("--torchtitan-config", f.torchtitan_config,
                  "torchtitan TOML ([parallelism], [training], [activation_checkpoint], [model] llama3 flavors): " + what);
  if (!trainer_files) return;
  sub->add_option("--hf-args", f.hf_args,
                  "HF Trainer TrainingArguments JSON (per_device_train_batch_size, gradient_accumulation_steps, "
                  "bf16/fp16, fsdp or deepspeed): " + what);
  sub->add_option("--accelerate-config", f.accelerate_config,
                  "Accelerate config YAML (distributed_type, num_processes, mixed_precision, fsdp_config, "
                  "deepspeed_config): " + what);
  sub->add_option("--lightning-config", f.lightning_config,
                  "Lightning Trainer YAML (trainer: devices, num_nodes, strategy, precision, accumulate_grad_batches): " +
                      what);
}

std::vector<ParallelLayout> layouts_from_flags(const LayoutFlags& f, const std::vector<ParallelLayout>& candidates) {
  if (!f.given()) return {};
  const bool tp_auto = f.tp == "auto", pp_auto = f.pp == "auto";
  const ParallelLayout base = parse_layout(f, true);
  if (!tp_auto && !pp_auto) return {base};
  if (candidates.empty())
    throw InputError(fmt::format("{} auto: layouts are searched for a --spec on a cluster only", tp_auto ? "--tp" : "--pp"));
  std::vector<ParallelLayout> out;
  for (ParallelLayout c : candidates) {
    if (!tp_auto && c.tp != base.tp) continue;
    if (!pp_auto && c.pp != base.pp) continue;
    if (c.pp > 1 && !f.schedule.empty()) {
      const bool chunks = traits(base.schedule).chunks;
      if (chunks != (c.virtual_stages > 1)) continue;
      c.schedule = base.schedule;
    }
    if (c.pp > 1 && !f.virtual_stages.empty() && c.virtual_stages != base.virtual_stages) continue;
    if (f.sequence_parallel && c.tp < 2) continue;
    c.cp = base.cp;
    out.push_back(c);
  }
  if (out.empty())
    throw InputError(fmt::format("--tp/--pp: no candidate layout matches the flags (tp {}, pp {}{}); relax --schedule "
                                 "or --virtual-stages",
                                 f.tp.empty() ? "1" : f.tp, f.pp.empty() ? "1" : f.pp,
                                 f.schedule.empty() ? "" : ", schedule " + f.schedule));
  return out;
}

}  // namespace gaccum::cli
