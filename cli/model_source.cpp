// What/why: see model_source.hpp.
#include "cli/model_source.hpp"

#include <iostream>

#include <fmt/format.h>

#include "cli/profile_cache.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"

namespace gaccum::cli {

LoadedModel load_model_source(const ModelSource& s) {
  if (int(s.profile.has_value()) + int(s.spec.has_value()) + int(s.spec_object.has_value()) +
          int(s.workload.has_value()) !=
      1)
    throw InputError("pass one of --workload / --torchscript, --profile profile.json or --spec spec.json");
  if (s.spec || s.spec_object) {
    if (s.spec && s.cluster.empty())
      throw InputError(fmt::format("{} needs --cluster cluster.json (device peak FLOP/s, memory and links)",
                                   s.model_config ? "--model-config" : "--spec"));
    model::TransformerSpec spec = s.spec ? model::load_spec(*s.spec, s.seq_len, s.model_config) : *s.spec_object;
    if (s.framework) model::apply_framework_defaults(spec, *s.framework, s.framework_source);
    if (s.grad_reduce_in_fp32) {
      spec.grad_dtype = *s.grad_reduce_in_fp32 ? model::GradDtype::fp32 : model::GradDtype::param;
      spec.grad_source = s.grad_source;
    }
    return load_spec_model(spec, s.spec ? *s.spec : s.spec_label, s.cluster, s.mfu, s.framework.has_value());
  }
  if (s.profile) return load_profile_model(*s.profile, s.cluster);
  auto cfg = *s.workload;
  cfg.device = workloads::resolve_device("auto");
  workloads::measure_plan_as(cfg, s.precision.value_or(Precision::fp32), s.checkpointing.value_or(Checkpointing::none));
  nlohmann::json source;
  Profile p = obtain_cached_profile(cfg, s.optimizer, s.reprofile, source, s.device_memory);
  return model_from_profile(std::move(p), std::move(source), s.cluster);
}

void add_model_source_flags(CLI::App* sub, ModelSourceFlags& f, bool with_reprofile) {
  sub->add_option("--workload", f.workload,
                  "Built-in workload NAME[:key=value,...], profiled first and cached (see `gaccum-tune workloads`)");
  add_torchscript_flags(sub, f.ts);
  sub->add_option("--device-memory", f.device_memory,
                  "--workload / --torchscript: the emulated CPU device's memory, e.g. 256MiB [default: 96MiB; a "
                  "TorchScript model: sized to it]");
  sub->add_option("--profile", f.profile, "Measured profile.json (from `gaccum-tune profile`)");
  sub->add_option("--spec", f.spec,
                  "Analytic transformer spec.json (examples/specs/), or a HuggingFace config.json; needs --cluster");
  sub->add_option("--model-config", f.model_config,
                  "HuggingFace config.json as the model (examples/hf/: llama, mistral, qwen2, gemma, gemma2, phi3, "
                  "gpt2, gpt_neox, mixtral, qwen2_moe); needs --cluster");
  sub->add_option("--seq-len", f.seq_len,
                  "Sequence length of a HuggingFace config [default: its max_position_embeddings]");
  sub->add_option("--cluster", f.cluster,
                  "Cluster description (examples/clusters/: nodes, GPUs per node, links, memory, price); scales a "
                  "profile beyond the local machine");
  sub->add_option("--mfu", f.mfu, "Model FLOP utilisation for --spec [default: 0.4]");
  if (with_reprofile) sub->add_flag("--reprofile", f.reprofile, "Profile again even when a cached profile matches");
}

namespace {

// The request of the flags, --model-config already read as --spec.
ModelSource sources_from_flags(const ModelSourceFlags& f, Optimizer optimizer, const std::string& default_workload) {
  const bool first = f.profile_first();
  if (int(!f.profile.empty()) + int(!f.spec.empty()) + int(first) > 1)
    throw InputError("pass at most one of --workload / --torchscript, --profile profile.json or --spec spec.json");
  if (!f.device_memory.empty() && (!f.profile.empty() || !f.spec.empty()))
    throw InputError(
        "--device-memory applies to the profile-first path (--workload / --torchscript), not to "
        "--profile/--spec");
  if (f.reprofile && (!f.profile.empty() || !f.spec.empty()))
    throw InputError(
        "--reprofile applies to the profile-first path (--workload or no source), not to --profile/--spec");
  if (!f.mfu.empty() && f.spec.empty())
    throw InputError("--mfu applies to --spec only (a profile's compute is measured)");
  ModelSource s;
  s.cluster = f.cluster;
  s.optimizer = optimizer;
  if (!f.spec.empty()) {
    s.spec = f.spec;
    if (!f.mfu.empty()) {
      s.mfu = parse_fraction(f.mfu, "--mfu");
      if (!(*s.mfu > 0)) throw InputError("--mfu: must be above 0 (a fraction such as 0.4 or 40%)");
    }
    return s;
  }
  if (!f.profile.empty()) {
    s.profile = f.profile;
    return s;
  }
  if (!first && default_workload.empty())
    throw InputError("pass one of --profile profile.json, --spec spec.json or --workload / --torchscript");
  s.workload = workload_from_flags(f.workload, f.ts, default_workload);
  if (!f.device_memory.empty()) s.device_memory = parse_bytes(f.device_memory, "--device-memory");
  s.reprofile = f.reprofile;
  return s;
}

}  // namespace

ModelSource model_source_from_flags(const ModelSourceFlags& f, Optimizer optimizer,
                                    const std::string& default_workload) {
  if (!f.spec.empty() && !f.model_config.empty())
    throw InputError("pass --spec or --model-config, not both (--spec reads a HuggingFace config.json too)");
  ModelSourceFlags g = f;  // --model-config is a --spec that must be a HuggingFace config
  if (!f.model_config.empty()) g.spec = f.model_config;
  if (!f.seq_len.empty() && g.spec.empty())
    throw InputError("--seq-len applies to a HuggingFace config.json (--model-config), not to a profile or workload");
  ModelSource s = sources_from_flags(g, optimizer, default_workload);
  s.model_config = !f.model_config.empty();
  if (!f.seq_len.empty()) s.seq_len = parse_positive_count(f.seq_len, "--seq-len");
  return s;
}

}  // namespace gaccum::cli
