// What: where predict, tune and check get their cost model, as one request and one loader:
//   ModelSource       exactly one of: a profile.json (+ --cluster to scale it), an analytic spec
//                     or a HuggingFace config.json (--model-config, --seq-len; model/hf_config.hpp)
//                     (+ --cluster, --mfu), or a workload profiled first (the cached profile of
//                     --workload / --torchscript, measured now when none matches; --device-memory,
//                     --reprofile);
//   ModelSourceFlags  the flags predict and tune register for it (add_model_source_flags) and
//                     their reading (model_source_from_flags: a flag that does not apply to the
//                     source given is an InputError naming it); check builds its ModelSource from
//                     its merged job inputs (cli/check_command.cpp) and loads it the same way.
// Why: one set of model-source options and one loader instead of one per command.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/model_flags.hpp"
#include "cli/profile_source.hpp"
#include "model/spec_model.hpp"
#include "core/optimizer.hpp"
#include "core/plan.hpp"
#include "workloads/workload.hpp"

namespace gaccum::cli {

struct ModelSource {
  std::optional<std::string> profile, spec;           // file paths
  std::optional<model::TransformerSpec> spec_object;  // a spec a framework config describes (check)
  std::string spec_label;                             // where spec_object came from
  std::optional<workloads::WorkloadConfig> workload;  // profile-first (device resolved by the loader)
  std::string cluster;                                // "" none
  bool model_config = false;                          // spec is a --model-config (HuggingFace only)
  Count seq_len = 0;                                  // --seq-len: a HuggingFace config's (0: its own)
  std::optional<double> mfu;                          // spec only
  // The job's framework (spec only): the loss and gradient dtype it uses where the spec does not
  // say (model/spec_model.hpp apply_framework_defaults); framework_source names the flag or file.
  std::optional<Framework> framework;
  std::string framework_source;
  // The gradient dtype a framework's file sets (spec only; over the spec and the framework's
  // default): true fp32, false the plan's precision.
  std::optional<bool> grad_reduce_in_fp32;
  std::string grad_source;
  std::optional<Bytes> device_memory;                 // profile-first only
  bool reprofile = false;                             // profile-first only
  Optimizer optimizer = Optimizer::adam;              // the optimizer whose state is profiled
  // Profile-first only: the precision asked for (--precision). bf16 profiles the workload in bf16
  // (a profile prices only the precision it measured); fp32, fp16 or none: fp32.
  std::optional<Precision> precision;
  // Profile-first only: --checkpointing full profiles the workload checkpointed (gpt).
  std::optional<Checkpointing> checkpointing;
};

// Loads exactly one source (InputError when none or several are set). A profile-first source says
// on stderr whether its profile was cached or measured now.
LoadedModel load_model_source(const ModelSource& s);

struct ModelSourceFlags {
  std::string workload;       // a built-in workload, profiled first and cached
  TorchScriptFlags ts;        // a user's TorchScript model, profiled first
  std::string device_memory;  // the emulated CPU device of the profile-first path
  std::string profile, spec, cluster, mfu;
  std::string model_config, seq_len;  // a HuggingFace config.json and its sequence length
  bool reprofile = false;
  bool profile_first() const { return !workload.empty() || ts.given(); }
  // The spec file given, by --spec or --model-config ("" none).
  const std::string& spec_file() const { return model_config.empty() ? spec : model_config; }
};

// --workload, --torchscript (and its inputs), --device-memory, --profile, --spec, --model-config,
// --seq-len, --cluster, --mfu, and --reprofile when `with_reprofile`.
void add_model_source_flags(CLI::App* sub, ModelSourceFlags& f, bool with_reprofile);

// The request the flags make. Without a source: the profile-first path of `default_workload`, or
// an InputError when it is empty (the command needs a source).
ModelSource model_source_from_flags(const ModelSourceFlags& f, Optimizer optimizer,
                                    const std::string& default_workload);

}  // namespace gaccum::cli
