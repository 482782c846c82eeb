// What: every input of `check` with where it came from, merged from layers (lowest first):
//         defaults < launcher environment < DeepSpeed config < job file < flags
//       and resolved into one job: micro_batch b, accum_steps k, world_size p, global_batch B
//       (any one of them derived from the other three; k defaults to 1 when both k and B are
//       missing, as DeepSpeed does), plus the optimisation and limit settings.
// Why: a platform team must see which file or flag a wrong value came from; the JSON verdict
//      prints {value, source} for every input.
// Limits: b, k, p at most kMaxSetting (larger is a typo, and keeps every prediction's byte
//      counts inside 64 bits); b x k x p must fit in 64 bits. Violations are InputErrors.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/deepspeed_config.hpp"
#include "check/job.hpp"
#include "core/framework.hpp"
#include "core/optimizer.hpp"
#include "core/parse.hpp"
#include "core/plan.hpp"
#include "core/strategy.hpp"
#include "core/units.hpp"
#include "tuner/tune_request.hpp"

namespace gaccum::check {

inline constexpr Count kMaxSetting = Count(1) << 24;  // 16777216

template <class T>
struct Sourced {
  std::optional<T> value;
  std::string source;  // "flag --micro-batch", "job file job.yaml", "default", "derived: ..."
  explicit operator bool() const { return value.has_value(); }
  const T& operator*() const { return *value; }
  const T* operator->() const { return &*value; }
  void set(T v, std::string src) {
    value = std::move(v);
    source = std::move(src);
  }
};

// One layer, or the merge of several.
struct CheckInputs {
  Sourced<Count> micro_batch, accum_steps, world_size, global_batch, max_accum_steps, dataset_size;
  Sourced<Strategy> strategy;
  Sourced<Framework> framework;      // --framework, or deepspeed from a DeepSpeed config; unset: any
  Sourced<ShardingChoice> sharding;  // none = DDP (the default)
  Sourced<Precision> precision;      // unset: the model's own
  Sourced<Checkpointing> checkpointing;
  // With checkpointing full, the fraction of the layers a framework's config recomputes when it
  // recomputes only some (Megatron-LM/NeMo's block method, torchtitan's every n-th layer); the
  // rest keep all their activations. Unset: every layer.
  Sourced<double> recomputed_fraction;
  Sourced<bool> offload_optimizer, offload_params;  // DeepSpeed offload: state kept off the device
  // Gradients accumulated and reduced in fp32 under a half precision, as a framework's file says
  // (Megatron-LM --grad-reduce-in-bf16 false, --accumulate-allreduce-grads-in-fp32 true;
  // torchtitan training.mixed_precision_reduce); unset: the framework's default
  // (model/spec_model.hpp GradDtype).
  Sourced<bool> grad_reduce_in_fp32;
  // The tensor/pipeline/context-parallel layout, field by field (a flag overrides one field of a
  // Megatron-LM, NeMo or torchtitan config): world_size = tp pp cp dp, accum_steps = microbatches.
  Sourced<Count> tp, pp, cp, virtual_stages;
  Sourced<Count> first_stage_layers, last_stage_layers;  // uneven first/last pipeline stage
  Sourced<std::vector<Count>> stage_layer_counts;        // every model stage's layers (torchtitan's parts)
  Sourced<Schedule> schedule;
  Sourced<bool> sequence_parallel;
  Sourced<bool> drop_last;
  Sourced<std::string> optimizer;  // sgd | adam | adamw | lamb, or a DeepSpeed type without a rule
  Sourced<double> lr;
  Sourced<tuner::LrReference> lr_ref;
  Sourced<double> noise_scale;
  Sourced<MemoryCap> memory_cap;
  Sourced<Bytes> device_memory;    // what a percentage cap is of (the model's device; printed, not merged)
  Sourced<double> margin, tolerance, lr_tolerance;
  // What is trained and where its measurements come from.
  Sourced<std::string> workload, workload_hash, profile, spec, cluster;
  Sourced<TorchScriptSource> torchscript;
  Sourced<double> mfu;
};

// Fields set in `top` replace those in `base`.
void overlay(CheckInputs& base, const CheckInputs& top);

// The documented defaults: strategy overlap, optimizer adam, memory_cap 100% of the device,
// margin 10%, tolerance 5%, lr_tolerance 10%, drop_last false.
CheckInputs default_inputs();
CheckInputs inputs_from_job(const JobFile& job);
// DeepSpeed's batch fields after derive_deepspeed_batch(); optimizer and lr; strategy fused
// (overlap with overlap_comm); drop_last from dataloader_drop_last.
CheckInputs inputs_from_deepspeed(const DeepSpeedConfig& ds, const DeepSpeedBatch& batch);
// InputError unless `name` is sgd | adam | adamw | lamb.
std::string validate_optimizer(const std::string& name, const std::string& field);

struct ResolvedJob {
  CheckInputs inputs;  // merged, with the derived values filled in and their derivation as source
  Count micro_batch = 0, accum_steps = 0, world_size = 0;
  Count global_batch = 0;            // as given, or b x k x dp when derived
  Count product = 0;                 // b x k x dp: the samples one optimizer step really takes
  bool inexact = false;              // a derivation had to round down (check 1 fails)
  std::string derivation;            // how a missing value was derived ("" when all were given)
  Strategy strategy = Strategy::overlap;
  ShardingChoice sharding;
  std::optional<Precision> precision;
  std::optional<Checkpointing> checkpointing;
  std::optional<double> recomputed_fraction;  // < 1, with checkpointing full only (CheckInputs)
  bool offload_optimizer = false, offload_params = false;
  ParallelLayout layout;             // dp only unless the inputs give tp, pp or cp
  Count data_parallel() const { return world_size / layout.model_parallel(); }
  std::string optimizer{to_string(Optimizer::adam)};  // a name of core/optimizer.hpp or a DeepSpeed type without a rule
  std::optional<double> lr;
  std::optional<tuner::LrReference> lr_ref;
  std::optional<Count> dataset_size;
  bool drop_last = false;
  std::optional<double> noise_scale;
  std::string noise_scale_hint;  // validate command (no -b/-k/-p) that measures B_noise; "" unknown
  MemoryCap memory_cap;
  double margin = 0.1, tolerance = 0.05, lr_tolerance = 0.1;
  std::optional<Count> max_accum_steps;
  bool consistent() const { return product == global_batch; }
};

ResolvedJob resolve(const CheckInputs& merged);

// v rounded to 10 significant digits, so printed JSON does not depend on last-bit noise.
double round_sig(double v);

// {name: {value, source}} for every input that has a value, in a fixed order.
nlohmann::ordered_json inputs_json(const CheckInputs& in);

}  // namespace gaccum::check
