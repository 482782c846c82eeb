// What: `tune --deepspeed-config`: what a DeepSpeed config fixes for the tuner, and the config
//       completed with the tuner's pick.
//   pins       numeric train_batch_size           the global batch B
//              numeric train_micro_batch_size_per_gpu / gradient_accumulation_steps: b / k
//              all three numeric                  world_size p = train / (micro x gas)
//              the plan (deepspeed_plan): sharding, strategy, checkpointing (none without an
//              activation_checkpointing section), precision (fp32 when neither bf16 nor fp16
//              is enabled, as DeepSpeed trains; searched when an enabled field is "auto"),
//              offload_optimizer / offload_param
//   "auto" or absent batch fields are left to the tuner.
//   completed  the user's document with train_batch_size = b x k x p,
//              train_micro_batch_size_per_gpu = b, gradient_accumulation_steps = k of the pick
//              (absent ones appended), bf16/fp16.enabled "auto" set from the pick's precision;
//              every other field and the key order kept (nlohmann::ordered_json).
// Why: DeepSpeed's autotuner writes the config it found; HF-style configs leave the batch
//      fields "auto" for someone to fill. A config that no world size can satisfy is bad
//      input (InputError naming the fields and the fix), as DeepSpeed would refuse it.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "check/deepspeed_config.hpp"
#include "core/plan.hpp"
#include "core/units.hpp"
#include "model/prediction.hpp"

namespace gaccum::check {

struct DeepSpeedTunePins {
  std::optional<Count> global_batch, micro_batch, accum_steps, world_size;
  DeepSpeedPlan plan;
  std::optional<Precision> precision;  // nullopt: "auto", searched
  std::string precision_source;
  bool precision_assumed = false;  // from an "auto" enabled (DeepSpeedPlan::precision_assumed)
  Checkpointing checkpointing = Checkpointing::none;
  std::string checkpointing_source;
  bool offload_optimizer = false, offload_params = false;
};

DeepSpeedTunePins deepspeed_tune_pins(const DeepSpeedConfig& c);

// The user's document (parsed in key order) completed with `pick` (see the file comment).
// fill_precision false: bf16/fp16.enabled "auto" stay "auto" (the pick was priced at another
// precision than the run's, e.g. a profile that measured fp32 only, so it says nothing of them).
nlohmann::ordered_json complete_deepspeed_config(nlohmann::ordered_json doc, const model::Config& pick,
                                                 bool fill_precision = true);

// The config file parsed in key order (after load_deepspeed_config has validated it).
nlohmann::ordered_json load_deepspeed_document(const std::string& path);

}  // namespace gaccum::check
