// What/why: see framework_emit.hpp.
#include "check/framework_emit.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "check/framework_configs.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"
#include "model/parallel_plan.hpp"

namespace gaccum::check {
namespace {

using ojson = nlohmann::ordered_json;

constexpr EmitFormatTraits kEmitTraits[] = {
    {EmitFormat::hf, "hf", "hf_training_args.json", "--hf-args", "HF Trainer"},
    {EmitFormat::accelerate, "accelerate", "accelerate_config.yaml", "--accelerate-config", "Accelerate"},
    {EmitFormat::lightning, "lightning", "lightning_trainer.yaml", "--lightning-config", "Lightning"},
    {EmitFormat::torchtitan, "torchtitan", "torchtitan.toml", "--torchtitan-config", "torchtitan"},
    {EmitFormat::megatron, "megatron", "megatron_args.sh", "--megatron-args", "Megatron-LM"},
    {EmitFormat::deepspeed, "deepspeed", "deepspeed_config.json", "--deepspeed-config", "DeepSpeed"},
};
constexpr const char* kHfDeepSpeed = "hf_deepspeed_config.json";
constexpr const char* kAccelerateDeepSpeed = "accelerate_deepspeed_config.json";

// Nodes x GPUs per node for `world` ranks: the fewest nodes of at most `per_node` GPUs that
// split the ranks evenly.
std::pair<Count, Count> nodes_of(Count world, Count per_node) {
  Count nodes = std::max<Count>(1, (world + per_node - 1) / std::max<Count>(1, per_node));
  while (world % nodes != 0) ++nodes;
  return {nodes, world / nodes};
}

bool accumulates_across_ranks(const model::Config& c) { return c.accum_steps > 1 && c.data_parallel() > 1; }

// The trainer-style frameworks (HF Trainer, Accelerate, Lightning): DDP, FSDP or DeepSpeed
// underneath, chosen by the sharding; nullopt with why when none runs the plan as the trainer would.
std::optional<Framework> trainer_framework(EmitFormat f, const EmitPlan& p, std::string& why) {
  const model::Config& c = p.pick;
  const char* name = traits(f).display;
  if (c.layout.model_parallel() > 1) {
    why = fmt::format("{} runs data-parallel plans (DDP, FSDP, DeepSpeed); the pick's layout {} needs --emit megatron "
                      "or torchtitan",
                      name, to_string(c.layout));
    return std::nullopt;
  }
  if (p.precision == Precision::fp8) {
    why = fmt::format("{} has no fp8 switch of its own (Transformer Engine is set in the script)", name);
    return std::nullopt;
  }
  if (p.checkpointing == Checkpointing::selective || p.checkpointing == Checkpointing::selective_op) {
    why = fmt::format("{} recomputes whole layers (gradient checkpointing), not the {} recompute priced", name,
                      to_string(p.checkpointing));
    return std::nullopt;
  }
  Framework fw = Framework::ddp;
  if (c.offload_optimizer || c.offload_params || c.sharding.sharding == Sharding::zero1) fw = Framework::deepspeed;
  else if (c.sharding.sharding != Sharding::none) fw = Framework::fsdp;
  if (fw == Framework::fsdp && c.sharding.sharding == Sharding::hsdp && c.sharding.group != p.gpus_per_node) {
    why = fmt::format("{}'s HYBRID_SHARD shards within a node of {} GPUs, the pick over groups of {}", name,
                      p.gpus_per_node, c.sharding.group);
    return std::nullopt;
  }
  if (f == EmitFormat::lightning && fw == Framework::deepspeed) {
    // Lightning's named DeepSpeed strategies: stage 1, 2, 2 + optimizer offload, 3, 3 + both offloads.
    const Sharding s = c.sharding.sharding;
    const bool any = c.offload_optimizer || c.offload_params;
    if ((s != Sharding::zero2 && s != Sharding::zero3 && any) || (s == Sharding::zero3 && c.offload_optimizer != c.offload_params)) {
      why = fmt::format("{}'s DeepSpeed strategies offload in stage 2 (the optimizer) and stage 3 (both) only", name);
      return std::nullopt;
    }
  }
  if (fw == Framework::deepspeed && c.sharding.sharding == Sharding::hsdp) {
    why = fmt::format("{} with DeepSpeed: MiCS (hsdp) is not written here", name);
    return std::nullopt;
  }
  // How the trainer accumulates: no_sync() under DDP (and FSDP in the HF Trainer and Accelerate);
  // Lightning blocks the sync of DDP models only, so its FSDP reduces on every micro-batch.
  if (fw != Framework::deepspeed && accumulates_across_ranks(c)) {
    const Strategy wanted = (f == EmitFormat::lightning && fw == Framework::fsdp) ? Strategy::every_step : Strategy::overlap;
    if (c.strategy != wanted) {
      why = fmt::format("{} with {} accumulates with strategy {}, the pick is {}", name, traits(fw).display,
                        to_string(wanted), to_string(c.strategy));
      return std::nullopt;
    }
  }
  FrameworkPlan fp = model::framework_plan(c);
  fp.precision = p.precision;
  if (auto r = framework_refusal(fw, fp)) {
    why = fmt::format("{} with {}: {}", name, traits(fw).display, *r);
    return std::nullopt;
  }
  return fw;
}

std::string plan_line(const EmitPlan& p) {
  const model::Config& c = p.pick;
  return fmt::format("micro_batch {} x accum_steps {} x data-parallel {} = global batch {}; {} ranks; {}; sharding {}; "
                     "{}; checkpointing {}",
                     c.micro_batch, c.accum_steps, c.data_parallel(), c.global_batch(), c.world_size,
                     to_string(c.layout), to_string(c.sharding.sharding), to_string(p.precision),
                     to_string(p.checkpointing));
}

// DeepSpeed's config for a data-parallel plan (stage from the sharding, overlap_comm from the
// strategy, offload, precision, the optimizer's learning rate when --lr-ref scaled one).
ojson deepspeed_document(const EmitPlan& p, Optimizer opt) {
  const model::Config& c = p.pick;
  ojson d;
  d["train_batch_size"] = c.global_batch();
  d["train_micro_batch_size_per_gpu"] = c.micro_batch;
  d["gradient_accumulation_steps"] = c.accum_steps;
  const Sharding s = c.sharding.sharding;
  ojson z;
  z["stage"] = s == Sharding::zero1 ? 1 : s == Sharding::zero2 ? 2 : s == Sharding::zero3 ? 3 : 0;
  z["overlap_comm"] = c.strategy == Strategy::overlap;
  if (c.offload_optimizer) z["offload_optimizer"] = ojson{{"device", "cpu"}};
  if (c.offload_params) z["offload_param"] = ojson{{"device", "cpu"}};
  d["zero_optimization"] = z;
  d["bf16"] = ojson{{"enabled", p.precision == Precision::bf16}};
  d["fp16"] = ojson{{"enabled", p.precision == Precision::fp16}};
  if (p.lr && opt != Optimizer::sgd) {
    const char* type = opt == Optimizer::adam ? "Adam" : opt == Optimizer::adamw ? "AdamW" : "Lamb";
    d["optimizer"] = ojson{{"type", type}, {"params", ojson{{"lr", *p.lr}}}};
  }
  if (p.checkpointing == Checkpointing::full)
    d["activation_checkpointing"] = ojson{{"partition_activations", false}, {"contiguous_memory_optimization", false}};
  return d;
}

std::string hf_fsdp(const model::Config& c) {
  switch (c.sharding.sharding) {
    case Sharding::zero2: return "shard_grad_op auto_wrap";
    case Sharding::hsdp: return "hybrid_shard auto_wrap";
    default: return "full_shard auto_wrap";
  }
}
const char* fsdp_strategy_name(const model::Config& c) {
  switch (c.sharding.sharding) {
    case Sharding::zero2: return "SHARD_GRAD_OP";
    case Sharding::hsdp: return "HYBRID_SHARD";
    default: return "FULL_SHARD";
  }
}
const char* hf_precision(Precision p) { return p == Precision::bf16 ? "bf16" : p == Precision::fp16 ? "fp16" : "no"; }

ojson hf_arguments(const EmitPlan& p, Framework fw) {
  const model::Config& c = p.pick;
  ojson j;
  j["output_dir"] = "output";
  j["per_device_train_batch_size"] = c.micro_batch;
  j["gradient_accumulation_steps"] = c.accum_steps;
  j["bf16"] = p.precision == Precision::bf16;
  j["fp16"] = p.precision == Precision::fp16;
  j["gradient_checkpointing"] = p.checkpointing == Checkpointing::full;
  if (p.lr) j["learning_rate"] = *p.lr;
  if (fw == Framework::fsdp) j["fsdp"] = hf_fsdp(c);
  if (fw == Framework::deepspeed) j["deepspeed"] = kHfDeepSpeed;
  return j;
}

std::string yaml_comment(const std::string& text) { return "# " + text + "\n"; }

std::string accelerate_yaml(const EmitPlan& p, Framework fw) {
  const model::Config& c = p.pick;
  const auto [nodes, per_node] = nodes_of(c.world_size, p.gpus_per_node);
  std::string t = yaml_comment("gaccum-tune tune's pick for Accelerate: " + plan_line(p));
  if (fw != Framework::deepspeed || c.world_size == 1)
    t += yaml_comment(fmt::format("The script's batch is not Accelerate's: DataLoader batch_size {} per process; "
                                  "accumulation {} (Accelerator(gradient_accumulation_steps=...) or "
                                  "ACCELERATE_GRADIENT_ACCUMULATION_STEPS, as launch.sh sets it)",
                                  c.micro_batch, c.accum_steps));
  const char* type = c.world_size == 1 ? "'NO'" : fw == Framework::fsdp ? "FSDP" : fw == Framework::deepspeed ? "DEEPSPEED" : "MULTI_GPU";
  t += "compute_environment: LOCAL_MACHINE\n";
  t += "debug: false\n";
  t += fmt::format("distributed_type: {}\n", type);
  t += "downcast_bf16: 'no'\n";
  t += "machine_rank: 0\n";
  t += "main_training_function: main\n";
  t += fmt::format("mixed_precision: '{}'\n", hf_precision(p.precision));
  t += fmt::format("num_machines: {}\n", nodes);
  t += fmt::format("num_processes: {}\n", c.world_size);
  t += "rdzv_backend: static\n";
  t += "same_network: true\n";
  t += "use_cpu: false\n";
  if (c.world_size > 1 && fw == Framework::fsdp) {
    t += "fsdp_config:\n";
    t += "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n";
    t += fmt::format("  fsdp_activation_checkpointing: {}\n", p.checkpointing == Checkpointing::full ? "true" : "false");
    t += "  fsdp_offload_params: false\n";
    t += fmt::format("  fsdp_sharding_strategy: {}\n", fsdp_strategy_name(c));
    t += "  fsdp_state_dict_type: SHARDED_STATE_DICT\n";
    t += "  fsdp_use_orig_params: true\n";
  }
  if (c.world_size > 1 && fw == Framework::deepspeed) {
    // The whole DeepSpeed config in a file of its own: Accelerate's own keys cannot say
    // overlap_comm, and a config file carries the batch fields too.
    t += "deepspeed_config:\n";
    t += fmt::format("  deepspeed_config_file: {}\n", kAccelerateDeepSpeed);
    t += "  zero3_init_flag: false\n";
  }
  return t;
}

std::string lightning_yaml(const EmitPlan& p, Framework fw) {
  const model::Config& c = p.pick;
  const auto [nodes, per_node] = nodes_of(c.world_size, p.gpus_per_node);
  std::string t = yaml_comment("gaccum-tune tune's pick for Lightning: " + plan_line(p));
  t += yaml_comment(fmt::format("LightningCLI: python train.py fit --config lightning_trainer.yaml; the DataLoader's "
                                "batch_size is {} per device{}",
                                c.micro_batch,
                                p.checkpointing == Checkpointing::full
                                    ? "; activation checkpointing (full) is the LightningModule's to switch on"
                                    : ""));
  t += "trainer:\n";
  t += "  accelerator: gpu\n";
  t += fmt::format("  devices: {}\n", per_node);
  t += fmt::format("  num_nodes: {}\n", nodes);
  if (c.world_size == 1) {
    t += "  strategy: auto\n";
  } else if (fw == Framework::fsdp) {
    if (c.sharding.sharding == Sharding::zero3) {
      t += "  strategy: fsdp\n";
    } else {
      t += "  strategy:\n";
      t += "    class_path: lightning.pytorch.strategies.FSDPStrategy\n";
      t += "    init_args:\n";
      t += fmt::format("      sharding_strategy: {}\n", fsdp_strategy_name(c));
    }
  } else if (fw == Framework::deepspeed) {
    const Sharding s = c.sharding.sharding;
    const int stage = s == Sharding::zero1 ? 1 : s == Sharding::zero2 ? 2 : 3;
    if (c.strategy == Strategy::overlap || stage >= 2) {  // the named strategies overlap (overlap_comm)
      t += fmt::format("  strategy: deepspeed_stage_{}{}\n", stage, c.offload_optimizer || c.offload_params ? "_offload" : "");
    } else {
      t += "  strategy:\n";
      t += "    class_path: lightning.pytorch.strategies.DeepSpeedStrategy\n";
      t += "    init_args:\n";
      t += fmt::format("      stage: {}\n", stage);
      t += "      overlap_comm: false\n";
    }
  } else {
    t += "  strategy: ddp\n";
  }
  t += fmt::format("  precision: {}\n", p.precision == Precision::bf16   ? "bf16-mixed"
                                        : p.precision == Precision::fp16 ? "16-mixed"
                                                                         : "32-true");
  t += fmt::format("  accumulate_grad_batches: {}\n", c.accum_steps);
  return t;
}

// The torchtitan flavor of a spec this tool knows by name (builtin:llama3-*), "" otherwise.
std::pair<std::string, std::string> torchtitan_model(const EmitPlan& p) {
  if (!p.model) return {};
  std::string n = p.model->name;
  for (auto& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const char* f : {"8b", "70b", "405b"})
    if (n == std::string("llama3-") + f) {
      std::string flavor = f;
      for (auto& ch : flavor) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      return {"llama3", flavor};
    }
  return {};
}

std::string torchtitan_toml(const EmitPlan& p) {
  std::string t = "# gaccum-tune tune's pick for torchtitan: " + plan_line(p) + "\n";
  const auto [name, flavor] = torchtitan_model(p);
  if (name.empty())
    t += "# [model]: set name and flavor to your model in torchtitan's registry (gaccum-tune priced the spec given to "
         "tune)\n";
  t += "\n[job]\ndump_folder = \"./outputs\"\n";
  if (!name.empty()) t += fmt::format("\n[model]\nname = \"{}\"\nflavor = \"{}\"\n", name, flavor);
  t += "\n[training]\n";
  if (p.model) t += fmt::format("seq_len = {}\n", p.model->seq_len);
  t += fmt::format("mixed_precision_param = \"{}\"\n", p.precision == Precision::bf16 ? "bfloat16" : "float32");
  const Optimizer opt = p.model ? p.model->optimizer : Optimizer::adam;
  if (p.lr && (opt == Optimizer::adam || opt == Optimizer::adamw))
    t += fmt::format("\n[optimizer]\nname = \"{}\"\nlr = {}\n", opt == Optimizer::adam ? "Adam" : "AdamW", *p.lr);
  t += "\n[parallelism]\n";
  if (p.pick.sharding.sharding == Sharding::zero2) t += "fsdp_reshard_after_forward = \"never\"\n";
  // Stages torchtitan would not make itself: every model stage's modules.
  if (const std::string fqns = p.model ? torchtitan_module_fqns(p.pick.layout, p.model->layers) : "";
      !fqns.empty())
    t += "module_fqns_per_model_part = " + fqns + "\n";
  if (p.checkpointing == Checkpointing::selective_op)
    t += "\n[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"op\"\n";
  else
    t += fmt::format("\n[activation_checkpoint]\nmode = \"{}\"\n", to_string(p.checkpointing));
  FrameworkConfig fc;
  fc.kind = ConfigKind::torchtitan;
  fc.text = t;
  return complete_framework_config(fc, p.pick, p.model ? p.model->layers : 0);
}

std::string megatron_args(const EmitPlan& p) {
  const model::Config& c = p.pick;
  const auto [nodes, per_node] = nodes_of(c.world_size, p.gpus_per_node);
  std::string t = "#!/usr/bin/env bash\n# gaccum-tune tune's pick for Megatron-LM: " + plan_line(p) + "\n";
  t += "# Run on each node (NODE_RANK, MASTER_ADDR set); add the data, tokenizer and schedule arguments.\n";
  t += fmt::format("torchrun --nnodes {} --nproc-per-node {} --node-rank \"${{NODE_RANK:-0}}\" --master-addr "
                   "\"${{MASTER_ADDR:-localhost}}\" --master-port 29500 pretrain_gpt.py \"$@\"",
                   nodes, per_node);
  auto arg = [&](const std::string& a) { t += " \\\n  " + a; };
  if (p.precision == Precision::bf16) arg("--bf16");
  if (p.precision == Precision::fp16) arg("--fp16");
  if (p.precision == Precision::fp8) arg("--bf16 --fp8-format hybrid");
  if (p.checkpointing == Checkpointing::full) arg("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1");
  if (p.checkpointing == Checkpointing::selective) arg("--recompute-granularity selective");
  if (c.sharding.sharding == Sharding::zero1) arg("--use-distributed-optimizer");
  if (c.strategy == Strategy::overlap) arg("--overlap-grad-reduce");
  if (p.lr) arg(fmt::format("--lr {:.6g}", *p.lr));
  if (p.model) {
    const model::TransformerSpec& s = *p.model;
    arg(fmt::format("--num-layers {} --hidden-size {} --num-attention-heads {}", s.layers, s.hidden, s.heads));
    arg(fmt::format("--seq-length {} --max-position-embeddings {}", s.seq_len, s.seq_len));
    if (s.ffn_hidden > 0) arg(fmt::format("--ffn-hidden-size {}", s.ffn_hidden));
    if (s.kv_heads > 0 && s.kv_heads != s.heads) arg(fmt::format("--group-query-attention --num-query-groups {}", s.kv_heads));
    if (s.head_dim > 0 && s.head_dim * s.heads != s.hidden) arg(fmt::format("--kv-channels {}", s.head_dim));
    if (s.gated_mlp) arg("--swiglu");
    if (s.rms_norm) arg("--normalization RMSNorm");
    if (!s.learned_positions) arg("--position-embedding-type rope");
    if (!s.tied_embeddings) arg("--untie-embeddings-and-output-weights");
    if (!s.bias) arg("--disable-bias-linear");
    if (s.qkv_bias) arg("--add-qkv-bias");
    if (!s.dropout) arg("--attention-dropout 0.0 --hidden-dropout 0.0");
    if (s.flash_attention) arg("--use-flash-attn");
    if (s.experts > 0) arg(fmt::format("--num-experts {} --moe-router-topk {}", s.experts, s.active_experts));
    arg(fmt::format("--vocab-size {}", s.vocab));
  }
  t += "\n";
  FrameworkConfig fc;
  fc.kind = ConfigKind::megatron_args;
  fc.text = t;
  return complete_framework_config(fc, c, p.model ? p.model->layers : 0);
}

}  // namespace

const EmitFormatTraits& traits(EmitFormat f) { return kEmitTraits[static_cast<std::size_t>(f)]; }

std::vector<EmitFormat> parse_emit_formats(std::string_view text) {
  std::vector<EmitFormat> out;
  std::string names;
  for (const auto& t : kEmitTraits) names += (names.empty() ? "" : ", ") + std::string(t.name);
  std::size_t at = 0;
  while (at <= text.size()) {
    const auto comma = text.find(',', at);
    std::string w(text.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at));
    w.erase(0, w.find_first_not_of(' '));
    w.erase(w.find_last_not_of(' ') + 1);
    for (auto& ch : w) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (w == "all") {
      for (const auto& t : kEmitTraits)
        if (std::find(out.begin(), out.end(), t.value) == out.end()) out.push_back(t.value);
    } else {
      const auto* t = std::find_if(std::begin(kEmitTraits), std::end(kEmitTraits), [&](const EmitFormatTraits& e) {
        return w == e.name || (w == "megatron-lm" && e.value == EmitFormat::megatron) ||
               (w == "transformers" && e.value == EmitFormat::hf);
      });
      if (t == std::end(kEmitTraits))
        throw InputError(fmt::format("--emit: '{}' is not a format; give a comma list of {} (or all)", w, names));
      if (std::find(out.begin(), out.end(), t->value) == out.end()) out.push_back(t->value);
    }
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  return out;
}

std::optional<Framework> emit_framework(EmitFormat f, const EmitPlan& p, std::string* why) {
  std::string reason;
  std::optional<Framework> fw;
  FrameworkPlan fp = model::framework_plan(p.pick);
  fp.precision = p.precision;
  auto direct = [&](Framework x) -> std::optional<Framework> {
    if (auto r = framework_refusal(x, fp)) {
      reason = fmt::format("{}: {}", traits(x).display, *r);
      return std::nullopt;
    }
    return x;
  };
  switch (f) {
    case EmitFormat::hf:
    case EmitFormat::accelerate:
    case EmitFormat::lightning: fw = trainer_framework(f, p, reason); break;
    case EmitFormat::torchtitan:
      if (!p.model)
        reason = "torchtitan trains its own model definitions: plan the model as a spec (--spec or --model-config) to "
                 "write its config";
      else if (p.pick.offload_optimizer || p.pick.offload_params)
        reason = "offload is DeepSpeed's here (torchtitan's CPU offload is not written)";
      else if (p.precision == Precision::fp16 || p.precision == Precision::fp8)
        reason = fmt::format("torchtitan's mixed_precision_param is bfloat16 or float32, the pick {}", to_string(p.precision));
      else
        fw = direct(Framework::torchtitan);
      break;
    case EmitFormat::megatron:
      if (!p.model)
        reason = "Megatron-LM trains its own model definitions: plan the model as a spec (--spec or --model-config) to "
                 "write its arguments";
      else if (p.pick.offload_optimizer || p.pick.offload_params) reason = "offload is DeepSpeed's here, not Megatron-LM's";
      else if (p.checkpointing == Checkpointing::selective_op)
        reason = "Megatron-LM has no per-op selective recompute (its selective recomputes the attention core): price "
                 "--checkpointing selective or full";
      else fw = direct(Framework::megatron);
      break;
    case EmitFormat::deepspeed:
      if (p.pick.layout.model_parallel() > 1)
        reason = fmt::format("a DeepSpeed config holds no tensor/pipeline layout (the pick's {})", to_string(p.pick.layout));
      else if (p.pick.sharding.sharding == Sharding::hsdp)
        reason = "DeepSpeed's hsdp (MiCS) is not written here";
      else if (p.checkpointing == Checkpointing::selective || p.checkpointing == Checkpointing::selective_op)
        reason = fmt::format("DeepSpeed's activation_checkpointing recomputes whole layers, not the {} recompute priced",
                             to_string(p.checkpointing));
      else
        fw = direct(Framework::deepspeed);
      break;
  }
  if (!fw && why) *why = reason;
  return fw;
}

std::vector<EmittedFile> emit_files(EmitFormat f, const EmitPlan& p) {
  std::string why;
  const auto fw = emit_framework(f, p, &why);
  if (!fw) throw InputError(fmt::format("--emit {}: {}", traits(f).name, why));
  const Optimizer opt = p.model ? p.model->optimizer : Optimizer::adam;
  switch (f) {
    case EmitFormat::hf: {
      std::vector<EmittedFile> out{{traits(f).file, hf_arguments(p, *fw).dump(2) + "\n"}};
      if (*fw == Framework::deepspeed) out.push_back({kHfDeepSpeed, deepspeed_document(p, opt).dump(2) + "\n"});
      return out;
    }
    case EmitFormat::accelerate: {
      std::vector<EmittedFile> out{{traits(f).file, accelerate_yaml(p, *fw)}};
      if (*fw == Framework::deepspeed && p.pick.world_size > 1)
        out.push_back({kAccelerateDeepSpeed, deepspeed_document(p, opt).dump(2) + "\n"});
      return out;
    }
    case EmitFormat::lightning: return {{traits(f).file, lightning_yaml(p, *fw)}};
    case EmitFormat::torchtitan: return {{traits(f).file, torchtitan_toml(p)}};
    case EmitFormat::megatron: return {{traits(f).file, megatron_args(p)}};
    case EmitFormat::deepspeed: return {{traits(f).file, deepspeed_document(p, opt).dump(2) + "\n"}};
  }
  return {};
}

std::string check_command(EmitFormat f, const EmitPlan& p, const std::string& dir, const std::string& check_tail) {
  const model::Config& c = p.pick;
  // A `dir` already quoted for the shell ("$here" in launch.sh) is kept as written.
  const std::string file = dir.empty()           ? std::string(traits(f).file)
                           : dir.front() == '"' ? dir + "/" + traits(f).file
                                                : shell_word(dir + "/" + traits(f).file);
  std::string cmd = fmt::format("gaccum-tune check {} {}", traits(f).check_flag, file);
  std::string why;
  const auto fw = emit_framework(f, p, &why);
  switch (f) {
    case EmitFormat::hf:
    case EmitFormat::megatron:
    case EmitFormat::deepspeed: cmd += fmt::format(" --world-size {}", c.world_size); break;
    case EmitFormat::accelerate:  // its DeepSpeed config file carries the batch
      if (fw != Framework::deepspeed || c.world_size == 1) cmd += fmt::format(" -b {} -k {}", c.micro_batch, c.accum_steps);
      break;
    case EmitFormat::lightning: cmd += fmt::format(" -b {}", c.micro_batch); break;
    case EmitFormat::torchtitan: break;
  }
  // Checkpointing the file cannot say: Lightning's and Accelerate's DDP/DeepSpeed (the script
  // switches it on), DeepSpeed's none (an absent section means "the model's own").
  const bool file_says = f == EmitFormat::hf || f == EmitFormat::torchtitan || f == EmitFormat::megatron ||
                         (f == EmitFormat::accelerate && fw == Framework::fsdp && c.world_size > 1) ||
                         (f == EmitFormat::deepspeed && p.checkpointing == Checkpointing::full);
  if (!file_says) cmd += fmt::format(" --checkpointing {}", to_string(p.checkpointing));
  return cmd + check_tail;
}

std::string launch_script(const std::vector<std::pair<EmitFormat, EmitPlan>>& plans, const std::string& check_tail) {
  Count max_nodes = 1, per_node_max = 1;
  Count gpn = 8;
  bool assumed = true;
  for (const auto& [f, p] : plans) {
    const auto [n, g] = nodes_of(p.pick.world_size, p.gpus_per_node);
    max_nodes = std::max(max_nodes, n);
    per_node_max = std::max(per_node_max, g);
    gpn = p.gpus_per_node;
    assumed = p.gpus_per_node_assumed;
  }
  std::string t = "#!/usr/bin/env bash\n";
  t += "# gaccum-tune tune's picks, launched: bash launch.sh FORMAT SCRIPT [ARGS...] on each node (NODE_RANK and\n"
       "# MASTER_ADDR set), or sbatch launch.sh FORMAT SCRIPT [ARGS...] under Slurm (one task per node).\n"
       "# megatron: ARGS only (the data and tokenizer arguments; pretrain_gpt.py is in megatron_args.sh).\n";
  t += fmt::format("# Nodes hold {} GPUs each{}.\n", gpn, assumed ? " (assumed: tune had no --cluster)" : " (the cluster's)");
  t += fmt::format("#SBATCH --nodes={}\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node={}\n", max_nodes, per_node_max);
  t += "#\n# Check each file before launching (exit 0: PASS):\n";
  for (const auto& [f, p] : plans) t += "#   " + check_command(f, p, "\"$here\"", check_tail) + "\n";
  t += "set -euo pipefail\n";
  t += "here=$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)\n";
  t += "format=${1:?usage: launch.sh FORMAT SCRIPT [ARGS...]}\nshift\n";
  t += "if [ -n \"${SLURM_JOB_ID:-}\" ]; then\n"
       "  MASTER_ADDR=${MASTER_ADDR:-$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)}\n"
       "  run() { srun --ntasks-per-node=1 \"$@\"; }\n"
       "else\n"
       "  run() { \"$@\"; }\n"
       "fi\n";
  t += "export MASTER_ADDR=${MASTER_ADDR:-localhost}\n";
  t += "case \"$format\" in\n";
  for (const auto& [f, p] : plans) {
    const model::Config& c = p.pick;
    const auto [nodes, per_node] = nodes_of(c.world_size, p.gpus_per_node);
    const std::string torchrun =
        fmt::format("torchrun --nnodes {} --nproc-per-node {} --rdzv-backend c10d --rdzv-endpoint \"$MASTER_ADDR:29500\" "
                    "--rdzv-id \"${{SLURM_JOB_ID:-gaccum}}\"",
                    nodes, per_node);
    t += fmt::format("  {})  # {} ranks = {} nodes x {}\n", traits(f).name, c.world_size, nodes, per_node);
    switch (f) {
      case EmitFormat::hf: {
        std::string why;
        const auto fw = emit_framework(f, p, &why);
        std::string flags;
        const ojson args = hf_arguments(p, fw.value_or(Framework::ddp));
        for (const auto& [k, v] : args.items()) {
          if (k == "deepspeed") flags += fmt::format(" --deepspeed \"$here/{}\"", kHfDeepSpeed);
          else if (v.is_string()) flags += fmt::format(" --{} {}", k, shell_word(v.get<std::string>()));
          else flags += fmt::format(" --{} {}", k, v.is_boolean() ? (v.get<bool>() ? "true" : "false") : v.dump());
        }
        t += fmt::format("    run {} \"$@\"{} ;;\n", torchrun, flags);
        break;
      }
      case EmitFormat::accelerate:
        // The node's rank is read where the command runs (each Slurm task), hence bash -c.
        t += fmt::format("    ACCELERATE_GRADIENT_ACCUMULATION_STEPS={} run bash -c 'exec accelerate launch --config_file "
                         "\"$0\" --machine_rank \"${{SLURM_NODEID:-${{NODE_RANK:-0}}}}\" --main_process_ip \"$MASTER_ADDR\" "
                         "--main_process_port 29500 \"$@\"' \"$here/accelerate_config.yaml\" \"$@\" ;;\n",
                         c.accum_steps);
        break;
      case EmitFormat::lightning:
        t += fmt::format("    run {} \"$@\" fit --config \"$here/lightning_trainer.yaml\" ;;\n", torchrun);
        break;
      case EmitFormat::torchtitan:
        t += fmt::format("    run {} \"$@\" --job.config_file \"$here/torchtitan.toml\" ;;\n", torchrun);
        break;
      case EmitFormat::megatron:
        t += "    run bash -c 'NODE_RANK=${SLURM_NODEID:-${NODE_RANK:-0}} exec bash \"$0\" \"$@\"' \"$here/megatron_args.sh\" "
             "\"$@\" ;;\n";
        break;
      case EmitFormat::deepspeed:
        t += fmt::format("    run {} \"$@\" --deepspeed --deepspeed_config \"$here/deepspeed_config.json\" ;;\n", torchrun);
        break;
    }
  }
  std::string names;
  for (const auto& [f, p] : plans) names += (names.empty() ? "" : " | ") + std::string(traits(f).name);
  t += fmt::format("  *) echo \"launch.sh: FORMAT is {}\" >&2; exit 2 ;;\nesac\n", names);
  return t;
}

}  // namespace gaccum::check
