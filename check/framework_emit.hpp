// What: tune's pick written in the training framework's own files (`tune --emit FORMAT,...`), one
//   small writer per format over one input (EmitPlan), and the launch script beside them:
//     hf          hf_training_args.json   HF Trainer TrainingArguments (per_device_train_batch_size,
//                                         gradient_accumulation_steps, bf16/fp16,
//                                         gradient_checkpointing, fsdp or deepspeed, learning_rate);
//                                         ZeRO-1 / offload plans point `deepspeed` at
//                                         hf_deepspeed_config.json, written with it
//     accelerate  accelerate_config.yaml  Accelerate's ClusterConfig (distributed_type,
//                                         num_processes, num_machines, mixed_precision,
//                                         fsdp_config or deepspeed_config pointing at
//                                         accelerate_deepspeed_config.json); without DeepSpeed the
//                                         micro-batch and the accumulation steps are the script's
//                                         (launch.sh sets ACCELERATE_GRADIENT_ACCUMULATION_STEPS)
//     lightning   lightning_trainer.yaml  LightningCLI `trainer:` (devices, num_nodes, strategy,
//                                         precision, accumulate_grad_batches)
//     torchtitan  torchtitan.toml         [training], [parallelism], [optimizer] lr,
//                                         [activation_checkpoint] (a model planned as a spec)
//     megatron    megatron_args.sh        Megatron-LM arguments with the model (a spec)
//     deepspeed   deepspeed_config.json   batch fields, zero_optimization, bf16/fp16, optimizer
//     launch.sh: torchrun on nodes x GPUs per node under an #SBATCH header, the HF flags
//     equivalent to the JSON, and the one `gaccum-tune check` line per file that reads it back.
//   Each format runs some plans only (core/framework.hpp): the HF Trainer, Accelerate and
//   Lightning run DDP, FSDP or DeepSpeed underneath, data parallel only; `emit_pick` picks the best
//   ranked plan the format runs and says when it is not tune's overall pick.
// Why: users launch with their framework's file; a hand translation of b / k / world size /
//   sharding / precision is where the misconfigurations come from. `check` reads every one of
//   these files back (check/framework_configs.hpp), so tune's output is checked as launched.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/framework.hpp"
#include "model/prediction.hpp"
#include "model/spec_model.hpp"

namespace gaccum::check {

enum class EmitFormat { hf, accelerate, lightning, torchtitan, megatron, deepspeed };

struct EmitFormatTraits {
  EmitFormat value;
  const char* name;        // --emit spelling
  const char* file;        // the file in tune's --out
  const char* check_flag;  // how `check` reads it back
  const char* display;     // how people call it
};
const EmitFormatTraits& traits(EmitFormat f);
inline constexpr EmitFormat kAllEmitFormats[] = {EmitFormat::hf,         EmitFormat::accelerate, EmitFormat::lightning,
                                                 EmitFormat::torchtitan, EmitFormat::megatron,   EmitFormat::deepspeed};

// "hf,accelerate" or "all"; InputError naming --emit and the known names otherwise. In order
// given, duplicates dropped.
std::vector<EmitFormat> parse_emit_formats(std::string_view text);

// One plan as the writers see it: the pick with its precision and checkpointing resolved.
struct EmitPlan {
  model::Config pick;
  Precision precision = Precision::fp32;
  Checkpointing checkpointing = Checkpointing::none;
  std::optional<model::TransformerSpec> model;  // a spec: Megatron's model arguments, torchtitan's flavor
  std::optional<double> lr;                     // the learning rate scaled from --lr-ref
  Count gpus_per_node = 8;                      // the cluster's, else 8
  bool gpus_per_node_assumed = true;            // no cluster said it
};

// The framework underneath a format for this plan: hf/accelerate/lightning choose DDP, FSDP or
// DeepSpeed from its sharding; nullopt with `why` when the format cannot run the plan.
std::optional<Framework> emit_framework(EmitFormat f, const EmitPlan& p, std::string* why = nullptr);

struct EmittedFile {
  std::string name, text;
};
// The format's file(s) for the plan (hf and accelerate may add their DeepSpeed config). InputError when the
// format cannot run it (emit_framework).
std::vector<EmittedFile> emit_files(EmitFormat f, const EmitPlan& p);

// launch.sh for the plans written (one per format, in order); `check_tail` is appended to every
// check line (the model and cluster flags of the tune run).
std::string launch_script(const std::vector<std::pair<EmitFormat, EmitPlan>>& plans, const std::string& check_tail);

// The `gaccum-tune check ...` line that reads the format's file in `dir` back, with the flags its
// file does not carry (the micro-batch of an Accelerate or Lightning config, the world size of
// HF's arguments, checkpointing where the file cannot say it).
std::string check_command(EmitFormat f, const EmitPlan& p, const std::string& dir, const std::string& check_tail);

}  // namespace gaccum::check
