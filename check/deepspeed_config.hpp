// What: the batch, optimizer and data-loader fields of a DeepSpeed config (ds_config.json) and
//       DeepSpeed's own rule for the batch fields, given the data-parallel world size p:
//         all three given      train_batch_size must equal micro x gas x p
//         train + micro        gas   = train // micro // p
//         train + gas          micro = train // p // gas
//         micro + gas          train = micro x gas x p
//         train only           gas = 1, micro = train // p
//         micro only           gas = 1, train = micro x p
//         neither train/micro  error ("either train_batch_size or train_micro_batch_size_per_gpu")
//       followed, as in DeepSpeed, by the assertion train == micro x gas x p (so a floor division
//       that loses samples is an inconsistency too). "auto" (the HF Trainer fills it in) counts
//       as not given.
//   fields read: train_batch_size, train_micro_batch_size_per_gpu, gradient_accumulation_steps,
//   optimizer.type, optimizer.params.lr, zero_optimization.stage / overlap_comm /
//   offload_optimizer.device / offload_param.device, bf16.enabled, fp16.enabled,
//   activation_checkpointing (present: full recomputation assumed), dataloader_drop_last.
//   ZeRO stage s is sharding zero<s> (0: none); stages 2 and 3 reduce-scatter gradients on every
//   micro-step (strategy every-step); "auto" in bf16/fp16.enabled is a 16-bit run assumed (the HF
//   Trainer fills it from --bf16/--fp16; DeepSpeedPlan::precision_assumed says so). Other top-level
//   keys DeepSpeed knows are accepted silently; a key it does not know is a warning (usually a
//   typo that DeepSpeed would silently ignore).
// Why: platform teams gate launches on the DeepSpeed config they will actually run; an
//      inconsistent one is bad input (exit 2) naming the fields, as DeepSpeed would refuse it.
// Strategy: DeepSpeed accumulates locally and reduces gradients at the accumulation boundary:
//   `fused` in our vocabulary; `overlap` when zero_optimization.overlap_comm is true.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/optimizer.hpp"
#include "core/plan.hpp"
#include "core/strategy.hpp"
#include "core/units.hpp"

namespace gaccum::check {

struct DeepSpeedConfig {
  std::string path;
  std::string hash;                   // canonical content hash
  std::optional<Count> train_batch_size;
  std::optional<Count> train_micro_batch_size_per_gpu;
  std::optional<Count> gradient_accumulation_steps;
  std::vector<std::string> auto_fields;  // fields set to "auto"
  std::optional<std::string> optimizer_type;  // as written, e.g. "AdamW"
  std::optional<double> lr;
  Count zero_stage = 0;
  bool overlap_comm = false;
  std::optional<Precision> precision;  // bf16.enabled / fp16.enabled; nullopt: neither (fp32)
  std::string precision_source;        // e.g. "bf16.enabled"
  bool precision_auto = false;         // bf16.enabled or fp16.enabled is "auto" (to be filled)
  std::vector<std::string> precision_auto_keys;  // "bf16", "fp16": the sections whose enabled is "auto"
  bool activation_checkpointing = false;  // an activation_checkpointing section is present
  bool offload_optimizer = false, offload_params = false;  // device "cpu" or "nvme"
  std::optional<bool> dataloader_drop_last;
  std::vector<std::string> warnings;
};

DeepSpeedConfig deepspeed_from_json(const nlohmann::json& doc, const std::string& what);
DeepSpeedConfig load_deepspeed_config(const std::string& path);

// The three batch fields after DeepSpeed's rule, each with how it was obtained.
struct DeepSpeedBatch {
  Count train_batch_size = 0, micro_batch = 0, accum_steps = 0;
  std::string train_batch_source, micro_batch_source, accum_steps_source;  // "given" or the formula
};
// InputError naming the fields when they are inconsistent or missing; `world_size_source` is
// quoted in the message.
DeepSpeedBatch derive_deepspeed_batch(const DeepSpeedConfig& c, Count world_size, const std::string& world_size_source);

// "auto" batch fields filled from the layers above the config (flags, job file), as the HF
// Trainer fills them from its arguments; fields given as numbers are kept (the merge decides).
DeepSpeedConfig fill_auto_fields(DeepSpeedConfig c, std::optional<Count> global_batch, std::optional<Count> micro_batch,
                                 std::optional<Count> accum_steps);

// The plan the config runs, each axis with the field it came from ("deepspeed <path> <field>"):
// zero_optimization.stage s -> sharding zero<s> (0: none); strategy every-step for stages 2 and
// 3 (gradients reduce-scattered into their partitions on every micro-step), overlap with
// overlap_comm, else fused; precision from bf16/fp16.enabled (nullopt: neither enabled);
// checkpointing full when an activation_checkpointing section is present (nullopt: absent).
struct DeepSpeedPlan {
  ShardingChoice sharding;
  Strategy strategy = Strategy::fused;
  std::optional<Precision> precision;
  std::optional<Checkpointing> checkpointing;
  std::string sharding_source, strategy_source, precision_source, checkpointing_source;
  // precision is bf16/fp16 assumed from an "auto" enabled (the HF Trainer fills it): a flag may
  // override it without a clash, and a profile that measured only fp32 prices the run at fp32.
  bool precision_assumed = false;
};
DeepSpeedPlan deepspeed_plan(const DeepSpeedConfig& c);

// DeepSpeed optimizer type -> the optimizer whose LR rule it follows (core/optimizer.hpp), nullopt
// when it has no scaling rule here (e.g. Adagrad, Lion).
std::optional<Optimizer> optimizer_rule_name(const std::string& type);

// The world size the three fields imply when all are given (train / (micro x gas)), if exact.
std::optional<Count> implied_world_size(const DeepSpeedConfig& c);

}  // namespace gaccum::check
