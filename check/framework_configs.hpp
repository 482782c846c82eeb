// What: the training frameworks' own configs as `check` inputs (one layer, like a DeepSpeed
//       config): the batch, the tensor/pipeline layout, precision, recompute, sharding and sync
//       strategy, and the model when the file describes it whole.
//   Megatron-LM arguments (--megatron-args FILE: a command line or an arguments file; a leading
//     `torchrun ... pretrain_gpt.py`, backslash-newlines and # comments allowed):
//     --tensor-model-parallel-size, --pipeline-model-parallel-size, --context-parallel-size,
//     --virtual-pipeline-model-parallel-size or --num-layers-per-virtual-pipeline-stage (v =
//     num-layers / (pp x that)), --sequence-parallel, --micro-batch-size, --global-batch-size,
//     --recompute-granularity full|selective (--recompute-activations: selective),
//     --use-distributed-optimizer (zero1), --overlap-grad-reduce (strategy overlap; else fused),
//     --bf16 / --fp16 (else fp32); the model from --num-layers, --hidden-size,
//     --num-attention-heads, --seq-length, --ffn-hidden-size (default 4h), --group-query-attention
//     with --num-query-groups, --swiglu, --normalization RMSNorm, --position-embedding-type rope,
//     --untie-embeddings-and-output-weights, --disable-bias-linear, --vocab-size (else the model
//     needs --spec). Other arguments are Megatron's own and ignored.
//   NeMo / Megatron-Bridge YAML (--nemo-config FILE): model.{micro_batch_size, global_batch_size,
//     tensor_model_parallel_size, pipeline_model_parallel_size, virtual_pipeline_model_parallel_size,
//     context_parallel_size, sequence_parallel, activations_checkpoint_granularity, num_layers,
//     hidden_size, ffn_hidden_size, num_attention_heads, num_query_groups, encoder_seq_length |
//     seq_length, make_vocab_size_divisible_by is ignored}, trainer.{devices, num_nodes, precision
//     (bf16-mixed, 16-mixed, 32)}, model.optim.name distributed_fused_adam (zero1).
//   torchtitan TOML (--torchtitan-config FILE): [parallelism] data_parallel_shard_degree (-1:
//     the rest), data_parallel_replicate_degree, fsdp_reshard_after_forward ("never": zero2),
//     tensor_parallel_degree, pipeline_parallel_degree,
//     pipeline_parallel_schedule (GPipe, 1F1B, Interleaved1F1B), pipeline_parallel_microbatch_size,
//     context_parallel_degree; [training] local_batch_size (per data-parallel rank),
//     global_batch_size, seq_len, mixed_precision_param; [optimizer] lr; [activation_checkpoint] mode;
//     [model] name + flavor: llama3 8B, 70B and 405B are known (model/spec_model.hpp
//     builtin_spec), other models need --spec. Sharding: shard degree > 1 is zero3 (hsdp with a
//     replicate degree > 1). The microbatches of one step: local_batch_size /
//     pipeline_parallel_microbatch_size (torchtitan's n_microbatches).
// Why: Megatron-LM, NeMo and torchtitan users check the file they launch with, not a transcription.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "check/check_inputs.hpp"
#include "model/spec_model.hpp"

namespace gaccum::check {

enum class ConfigKind { megatron_args, nemo, torchtitan, hf_args, accelerate, lightning };

struct FrameworkConfig {
  ConfigKind kind = ConfigKind::megatron_args;
  std::string text;  // the file as read (what complete_framework_config edits)
  std::string path;
  Framework framework = Framework::megatron;
  CheckInputs inputs;                           // every value sourced to the file and its field
  std::optional<model::TransformerSpec> model;  // the model the file describes, when whole
  std::string builtin_model;                    // torchtitan flavor known here: "builtin:llama3-8b"
  std::vector<std::string> warnings;
  std::string hash;                             // content hash (check 3's files hash)
};

FrameworkConfig load_megatron_args(const std::string& path);
FrameworkConfig load_nemo_config(const std::string& path);
FrameworkConfig load_torchtitan_config(const std::string& path);
// The trainers' files (check only; what `tune --emit` writes, check/framework_emit.hpp):
//   HF TrainingArguments JSON (--hf-args): per_device_train_batch_size, gradient_accumulation_steps,
//     bf16 / fp16, gradient_checkpointing (full), learning_rate, fsdp ("full_shard" zero3,
//     "shard_grad_op" zero2, "hybrid_shard" hsdp within a node, "no_shard"; strategy overlap: the
//     Trainer accumulates under no_sync()) or deepspeed (a config path, relative to the file, or
//     an object: its stage, offload and precision). No world size: --world-size or the launcher's.
//   Accelerate config YAML (--accelerate-config): distributed_type NO | MULTI_GPU | FSDP |
//     DEEPSPEED, num_processes (all machines), mixed_precision, fsdp_config
//     (fsdp_sharding_strategy by name or number, fsdp_reshard_after_forward for fsdp_version 2,
//     fsdp_activation_checkpointing), deepspeed_config (zero_stage, gradient_accumulation_steps,
//     offload devices, deepspeed_config_file). The micro-batch is the script's (-b).
//   Lightning Trainer YAML (--lightning-config; a LightningCLI config's trainer:, or the
//     Trainer's arguments at the top): devices x num_nodes, strategy (ddp*, fsdp, deepspeed_stage_N
//     [_offload], or class_path FSDPStrategy / DeepSpeedStrategy with init_args), precision,
//     accumulate_grad_batches; data.batch_size when the DataModule takes one (else -b). Lightning
//     blocks the gradient sync of DDP models only: FSDP reduces on every micro-batch.
FrameworkConfig load_hf_training_args(const std::string& path);
FrameworkConfig load_accelerate_config(const std::string& path);
FrameworkConfig load_lightning_config(const std::string& path);

// The file completed with a configuration (tune's pick): the batch (micro_batch, global batch;
// torchtitan's local_batch_size = b x m with a pipeline, b without), the activation recompute
// where the pick's differs from the file's, the layout (tp, pp, v, schedule, sequence parallel)
// set in the file's own fields by text edits, every other line kept; a field the file lacks is
// added. `layers` converts v into Megatron's --num-layers-per-virtual-pipeline-stage where the file
// uses it.
std::string complete_framework_config(const FrameworkConfig& fc, const model::Config& pick, Count layers);
// torchtitan's module_fqns_per_model_part for a pipeline layout of `layers` transformer layers
// (the TOML array, a line per model stage of its FQNs tok_embeddings, layers.N, norm, output), or
// "" when torchtitan makes those stages itself from the file alone:
// one stage per rank (Interleaved1F1B two) split as model/parallel_plan.hpp torchtitan_split at
// the default first/last_stage_less_layers.
std::string torchtitan_module_fqns(const ParallelLayout& l, Count layers);
// The completed file's name in tune's --out: megatron_args.sh, nemo_config.yaml, torchtitan.toml.
// Megatron-LM's --pipeline-model-parallel-layout (Megatron-Core's PipelineParallelLayerLayout),
// read as Megatron-LM reads it: cosmetic commas dropped, "(...)*n" then "x*n" unrolled, stages
// split at '|' (model stage j = chunk c pp + rank r, so v = stages / pp), 'E' the embedding
// (exactly once, first), 't' a transformer layer, 'L' the loss (exactly once, last). Returns the
// transformer layers of each model stage; InputError (prefixed with `what`) on what Megatron-LM
// refuses, on multi-token prediction layers ('m') and on a stage without a transformer layer
// (neither priced here). "Et*3|(tt|)*2t*3L" on pp 2 -> {3, 2, 2, 3}, v 2.
struct MegatronLayout {
  std::vector<Count> stage_layers;
  Count virtual_stages = 1;
};
MegatronLayout parse_megatron_layout(const std::string& text, Count pp, const std::string& what);
const char* completed_name(ConfigKind k);

// A TOML document (toml++, Debian's libtomlplusplus-dev) as one flat JSON object: keys as
// "table.key" (nested and inline tables flattened), values strings, integers, floats, booleans,
// dates as text and arrays of them. InputError naming the file and line of a syntax error (toml++'s
// description), and of an array of tables.
nlohmann::json parse_toml(const std::string& text, const std::string& what);

}  // namespace gaccum::check
