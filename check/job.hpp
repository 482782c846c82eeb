// What: our job file (`check --job job.json|job.yaml`): what is trained, on what, with which
//       batch settings, as a value with every field optional (flags and a DeepSpeed config may
//       supply the rest; check_inputs.hpp merges them).
//
// Schema "gaccum-tune/job", schema_version 1 (JSON, or YAML with the same keys):
//   schema            "gaccum-tune/job"                      optional; checked when present
//   schema_version    1                                      optional; must be 1 when present
//   name              "gpt-tiny pretrain"                    optional label
//   -- the model: at most one of workload / torchscript / spec (profile may join workload) --
//   workload          "gpt-tiny" or "gpt-tiny:layers=4"      a built-in workload (gaccum-tune workloads)
//   workload_hash     "00000000deadbeef"                     optional: the profile must carry this hash
//   torchscript       {path: "model.pt", input_shape: [3, 32, 32], target: "classes:10"}
//   profile           "profile.json"                         measured profile (gaccum-tune profile)
//   spec              "specs/gpt2-small.json"                analytic transformer spec (needs cluster)
//   cluster           "clusters/dgx-h100-1node.json"         cluster description
//   mfu               0.4 or "40%"                           with spec only
//   deepspeed_config  "ds_config.json"                       read as --deepspeed-config would be
//   -- the batch (B = micro_batch x accum_steps x world_size) --
//   micro_batch, accum_steps, world_size, global_batch       positive integers
//   strategy          "overlap" | "fused" | "every-step"
//   framework         "ddp" | "fsdp" | "fsdp2" | "deepspeed" | "megatron" | "torchtitan" | "horovod"
//                     (the plans it runs only: core/framework.hpp)
//   sharding          "none" | "zero1" | "zero2" | "zero3" | "hsdp:G" (FSDP names: "full_shard", ...)
//   precision         "fp32" | "bf16" | "fp16"         (default: the model's own)
//   checkpointing     "none" | "selective" | "full"    (default: the model's own)
//   max_accum_steps   positive integer (the efficiency check's search limit)
//   -- data and optimisation --
//   dataset_size      positive integer, samples per epoch
//   drop_last         true | false (the DataLoader's)
//   optimizer         "sgd" | "adam" | "adamw" | "lamb" (core/optimizer.hpp; check_inputs.cpp parses it)
//   lr                positive number
//   lr_ref            "3e-4@256" or {lr: 3e-4, global_batch: 256}
//   noise_scale       positive number, B_noise in samples (overrides the profile's estimate)
//   -- limits --
//   memory_cap        "90%", "70GiB" or a number of bytes
//   margin            "10%" or 0.1;  tolerance "5%" (efficiency);  lr_tolerance "10%"
// Paths are relative to the job file's directory. Keys starting with '_' and "comment" are
// ignored; any other unknown key is a warning naming it (with the closest known key), never an
// error. Sizes: integers within 64 bits, at least 1 (0, negatives, 2.5, 1e30 are errors).
// Why: one file per training job that CI and the launch scripts pass to `check` unchanged.
#pragma once

#include "core/model_inputs.hpp"
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/parse.hpp"
#include "core/plan.hpp"
#include "core/framework.hpp"
#include "core/strategy.hpp"
#include "core/units.hpp"
#include "tuner/tune_request.hpp"

namespace gaccum::check {

inline constexpr const char* kJobSchema = "gaccum-tune/job";
inline constexpr int kJobSchemaVersion = 1;

struct TorchScriptSource {
  std::string path;
  std::vector<ModelInput> inputs;  // forward()'s arguments: input_shape [3, 32, 32] or inputs ["tokens:1000:64", ...]
  ModelTarget target;              // "classes:10" (default), "regression:4" or "tokens:1000"
};

struct JobFile {
  std::string path;   // as given
  std::string hash;   // canonical content hash (16 hex digits)
  std::optional<std::string> name;
  std::optional<std::string> workload, workload_hash, profile, spec, cluster, deepspeed_config;
  std::optional<TorchScriptSource> torchscript;
  std::optional<double> mfu;
  std::optional<Count> micro_batch, accum_steps, world_size, global_batch, max_accum_steps, dataset_size;
  std::optional<Strategy> strategy;
  std::optional<Framework> framework;
  std::optional<ShardingChoice> sharding;
  std::optional<Precision> precision;
  std::optional<Checkpointing> checkpointing;
  std::optional<Count> tp, pp, cp, virtual_stages;  // the layout (core/plan.hpp ParallelLayout)
  std::optional<Schedule> schedule;
  std::optional<bool> sequence_parallel;
  // A framework's own config the job runs with (check/framework_configs.hpp), relative paths
  // resolved against the job file's folder.
  std::optional<std::string> megatron_args, nemo_config, torchtitan_config;
  std::optional<bool> drop_last;
  std::optional<std::string> optimizer;
  std::optional<double> lr;
  std::optional<tuner::LrReference> lr_ref;
  std::optional<double> noise_scale;
  std::optional<MemoryCap> memory_cap;
  std::optional<double> margin, tolerance, lr_tolerance;
  std::vector<std::string> warnings;  // unknown keys, one line each
};

// `what` names the file in messages; relative paths inside are resolved against base_dir.
JobFile job_from_json(const nlohmann::json& doc, const std::string& what, const std::string& base_dir);
// Reads, parses (JSON or YAML by extension, else by content) and validates a job file.
JobFile load_job(const std::string& path);

// Shared readers for the textual values job files and flags both accept.
double read_fraction(const nlohmann::json& v, const std::string& field);          // 0.1 or "10%"
MemoryCap read_memory_cap(const nlohmann::json& v, const std::string& field);     // "90%", "70GiB", bytes
double read_positive_number(const nlohmann::json& v, const std::string& field);   // finite, > 0
// Unknown keys of `fields` as warnings "<path>: unknown key 'x' ignored (did you mean 'y'?)".
void warn_unknown_keys(const std::vector<std::string>& unknown, const std::vector<std::string>& known,
                       const std::string& path, std::vector<std::string>& warnings);

}  // namespace gaccum::check
