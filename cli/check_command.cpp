// What: `gaccum-tune check`: the pre-launch gate. Reads a job from flags, a job file (--job,
//       JSON or YAML, schema in check/job.hpp), a DeepSpeed config (--deepspeed-config, with the
//       world size from flags or the launcher's WORLD_SIZE / SLURM_NTASKS), and a cost model
//       (--profile, --spec with --cluster, or --workload / --torchscript profiled once and cached);
//       runs the eight checks of check/checks.hpp and prints a table, or with --json one
//       "gaccum-tune/check" object. With --distributed every rank of a torchrun / Slurm launch
//       runs it and the ranks compare their settings through c10d (check 3); --probe-links then
//       times the job's allreduce per level and warns where --cluster is off (drift).
//       Exit codes: 0 no check failed, 1 a check failed (or warned, with --strict), 2 bad input.
// Why: platform teams put this in front of every training launch; it must be fast (no profiling
//      with a cached or given profile), deterministic, and say what is wrong and how to fix it.
//
// Precedence (lowest first): defaults < launcher environment < DeepSpeed config < job file <
// flags; a model-source flag (--profile/--spec/--workload/--torchscript) replaces the job file's
// model source (apply_model_source_flags below). Defaults: --strategy overlap --optimizer adam --memory-cap 100% --margin 10%
// --tolerance 5% --lr-tolerance 10% --timeout 60s.
#include <filesystem>
#include <iostream>
#include <memory>
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "check/check_inputs.hpp"
#include "check/deepspeed_config.hpp"
#include "check/framework_configs.hpp"
#include "check/job.hpp"
#include "check/profile_match.hpp"
#include "check/rank_agreement.hpp"
#include "check/rank_agreement_c10d.hpp"
#include "check/verdict.hpp"
#include "comm/communicator.hpp"
#include "profiler/link_probe.hpp"
#include "cli/model_flags.hpp"
#include "cli/layout_flags.hpp"
#include "cli/model_source.hpp"
#include "core/model_inputs.hpp"
#include "cli/command.hpp"
#include "cli/noise_scale_cache.hpp"
#include "cli/profile_cache.hpp"
#include "cli/profile_source.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/utc_time.hpp"
#include "model/cluster.hpp"
#include "core/parse.hpp"
#include "core/rank_env.hpp"
#include "core/text_lines.hpp"
#include "core/version.hpp"
#include "workloads/workload.hpp"

namespace gaccum::cli {
namespace {

using check::CheckInputs;
using check::Sourced;

struct CheckOptions {
  std::string job, deepspeed_config;
  FrameworkConfigFlags fw_config;  // a framework's own config (check/framework_configs.hpp)
  LayoutFlags layout;  // --tp, --pp, --cp, --virtual-stages, --schedule, --sequence-parallel
  std::string profile, spec, cluster, mfu, workload;
  std::string model_config, seq_len;  // a HuggingFace config.json as the spec, its sequence length
  TorchScriptFlags ts;  // --torchscript and its inputs
  std::string micro_batch, accum_steps, world_size, global_batch, strategy, optimizer;
  std::string sharding, precision, checkpointing;
  std::string framework;  // --framework
  std::string lr, lr_ref, dataset_size, memory_cap, margin, tolerance, lr_tolerance, max_accum_steps, noise_scale;
  bool drop_last = false;
  bool strict = false;
  bool json = false;
  bool distributed = false;
  bool reprofile = false;
  std::string timeout = "60s";
  std::string cluster_max_age;  // drift: warn when the cluster's numbers are older (default 90d when dated)
  bool probe_links = false;     // drift: time the job's allreduce per level against --cluster (--distributed)
  std::string probe_tolerance = "25%";
  std::string probe_sizes = "64K-16M*16";
  std::string probe_iters = "10";
  std::string probe_device = "auto";
  std::string device_memory;  // the CPU "device" for --workload / --torchscript without a profile
};

CheckInputs flag_inputs(const CheckOptions& o) {
  CheckInputs in;
  auto count = [](Sourced<Count>& dst, const std::string& text, const char* flag) {
    if (!text.empty()) dst.set(parse_positive_count(text, flag), fmt::format("flag {}", flag));
  };
  count(in.micro_batch, o.micro_batch, "--micro-batch");
  count(in.accum_steps, o.accum_steps, "--accum-steps");
  count(in.world_size, o.world_size, "--world-size");
  count(in.global_batch, o.global_batch, "--global-batch");
  count(in.max_accum_steps, o.max_accum_steps, "--max-accum-steps");
  count(in.dataset_size, o.dataset_size, "--dataset-size");
  if (!o.strategy.empty()) in.strategy.set(parse_strategy(o.strategy, "--strategy"), "flag --strategy");
  if (!o.framework.empty()) in.framework.set(parse_framework(o.framework, "--framework"), "flag --framework");
  if (!o.sharding.empty()) in.sharding.set(parse_sharding(o.sharding, "--sharding"), "flag --sharding");
  if (o.layout.given()) {
    // Field by field, so a flag overrides one field of a framework config.
    const ParallelLayout l = layout_from_flags(o.layout);
    if (!o.layout.tp.empty()) in.tp.set(l.tp, "flag --tp");
    if (!o.layout.pp.empty()) in.pp.set(l.pp, "flag --pp");
    if (!o.layout.cp.empty()) in.cp.set(l.cp, "flag --cp");
    if (!o.layout.virtual_stages.empty()) in.virtual_stages.set(l.virtual_stages, "flag --virtual-stages");
    if (!o.layout.schedule.empty() || !o.layout.virtual_stages.empty())
      in.schedule.set(l.schedule, o.layout.schedule.empty() ? "flag --virtual-stages" : "flag --schedule");
    if (o.layout.sequence_parallel) in.sequence_parallel.set(true, "flag --sequence-parallel");
    if (l.first_stage_layers > 0) in.first_stage_layers.set(l.first_stage_layers, "flag --stage-layers");
    if (l.last_stage_layers > 0) in.last_stage_layers.set(l.last_stage_layers, "flag --stage-layers");
    if (!l.stage_layer_counts.empty()) in.stage_layer_counts.set(l.stage_layer_counts, "flag --stage-layers");
  }
  if (!o.precision.empty()) in.precision.set(parse_precision(o.precision, "--precision"), "flag --precision");
  if (!o.checkpointing.empty())
    in.checkpointing.set(parse_checkpointing(o.checkpointing, "--checkpointing"), "flag --checkpointing");
  if (!o.optimizer.empty()) in.optimizer.set(check::validate_optimizer(o.optimizer, "--optimizer"), "flag --optimizer");
  if (!o.lr.empty()) in.lr.set(check::read_positive_number(o.lr, "--lr"), "flag --lr");
  if (!o.lr_ref.empty()) in.lr_ref.set(tuner::parse_lr_reference(o.lr_ref, "--lr-ref"), "flag --lr-ref");
  if (!o.noise_scale.empty())
    in.noise_scale.set(check::read_positive_number(o.noise_scale, "--noise-scale"), "flag --noise-scale");
  if (!o.memory_cap.empty()) in.memory_cap.set(parse_memory_cap(o.memory_cap, "--memory-cap"), "flag --memory-cap");
  if (!o.margin.empty()) in.margin.set(parse_fraction(o.margin, "--margin"), "flag --margin");
  if (!o.tolerance.empty()) in.tolerance.set(parse_fraction(o.tolerance, "--tolerance"), "flag --tolerance");
  if (!o.lr_tolerance.empty()) in.lr_tolerance.set(parse_fraction(o.lr_tolerance, "--lr-tolerance"), "flag --lr-tolerance");
  if (o.drop_last) in.drop_last.set(true, "flag --drop-last");
  // The model source: flags replace the job file's as a whole (see the file comment).
  if (!o.profile.empty()) in.profile.set(o.profile, "flag --profile");
  if (!o.spec.empty() && !o.model_config.empty())
    throw InputError("pass --spec or --model-config, not both (--spec reads a HuggingFace config.json too)");
  if (!o.spec.empty()) in.spec.set(o.spec, "flag --spec");
  if (!o.model_config.empty()) in.spec.set(o.model_config, "flag --model-config");
  if (!o.workload.empty()) in.workload.set(o.workload, "flag --workload");
  if (o.ts.given()) {
    check::TorchScriptSource ts;
    ts.path = o.ts.file;
    const auto texts = o.ts.input_texts();
    if (!texts.empty()) ts.inputs = parse_model_inputs(texts, o.ts.input_shape.empty() ? "--input" : "--input-shape");
    if (!o.ts.target.empty()) ts.target = parse_model_target(o.ts.target, "--target");
    if (!ts.inputs.empty()) check_target_fits_inputs(ts.target, ts.inputs, "--target");
    in.torchscript.set(ts, "flag --torchscript");
  } else {
    o.ts.require_file_for_options();
  }
  if (!o.cluster.empty()) in.cluster.set(o.cluster, "flag --cluster");
  if (!o.mfu.empty()) {
    const double m = parse_fraction(o.mfu, "--mfu");
    if (!(m > 0)) throw InputError("--mfu: must be above 0 (a fraction such as 0.4 or 40%)");
    in.mfu.set(m, "flag --mfu");
  }
  return in;
}

// A model-source flag replaces the job file's model source: --spec all of it; --profile the
// job's profile or spec (its workload stays, to check the profile is of it); --workload /
// --torchscript the job's workload, TorchScript, hash and spec (its profile stays, checked
// against the flag's workload).
void apply_model_source_flags(const CheckInputs& flags, CheckInputs& job) {
  if (flags.spec) {
    job.profile = {}, job.workload = {}, job.torchscript = {}, job.workload_hash = {};
  }
  if (flags.profile) job.profile = {}, job.spec = {};
  if (flags.workload || flags.torchscript) {
    job.workload = {}, job.torchscript = {}, job.workload_hash = {}, job.spec = {};
  }
}

// What the environment's launcher says about the world size (only when it parses).
CheckInputs environment_inputs(const RankContext& ctx) {
  CheckInputs in;
  if (!ctx.distributed()) return in;
  const char* var = ctx.launcher == "slurm" ? "SLURM_NTASKS" : ctx.launcher == "mpirun" ? "OMPI_COMM_WORLD_SIZE" : "WORLD_SIZE";
  in.world_size.set(ctx.world_size, fmt::format("environment {} ({})", var, ctx.launcher));
  return in;
}

struct Prepared {
  check::ResolvedJob job;
  std::optional<LoadedModel> model;
  std::vector<std::string> warnings;
  std::string files_hash;  // job / DeepSpeed file contents and the model's workload, for check 3
};

Prepared prepare(const CheckOptions& o, const RankContext& ctx) {
  Prepared out;
  const CheckInputs flags = flag_inputs(o);
  std::optional<check::JobFile> job;
  if (!o.job.empty()) {
    job = check::load_job(o.job);
    out.warnings.insert(out.warnings.end(), job->warnings.begin(), job->warnings.end());
  }
  CheckInputs from_job = job ? check::inputs_from_job(*job) : CheckInputs{};
  apply_model_source_flags(flags, from_job);
  const CheckInputs env = environment_inputs(ctx);

  CheckInputs merged = check::default_inputs();
  check::overlay(merged, env);
  // The cluster's GPU count: the world size when nothing else gives or determines it (a world size
  // given by a flag, the job file or the launcher, or derived from b, k and B, wins).
  Sourced<Count> cluster_world;
  {
    const Sourced<std::string>& cl = flags.cluster ? flags.cluster : from_job.cluster;
    if (cl) {
      const model::Cluster c = model::load_cluster(*cl);
      const Count gpus = checked_mul(c.nodes, c.gpus_per_node).value_or(0);
      if (gpus > 0)
        cluster_world.set(gpus, fmt::format("cluster {} ({} node{} x {} GPUs; from {})", *cl, c.nodes,
                                            c.nodes == 1 ? "" : "s", c.gpus_per_node, cl.source));
    }
  }
  std::string ds_path = o.deepspeed_config;
  if (ds_path.empty() && job && job->deepspeed_config) ds_path = *job->deepspeed_config;
  std::string ds_hash;
  std::string ds_assumed_precision;  // the source of a precision assumed from "auto" (DeepSpeedPlan)
  if (!ds_path.empty()) {
    // "auto" batch fields are filled from the flags, else the job file (the HF Trainer's way).
    auto above = [&](const Sourced<Count>& flag, const Sourced<Count>& jobv) {
      return flag ? flag.value : jobv.value;
    };
    const check::DeepSpeedConfig ds = check::fill_auto_fields(
        check::load_deepspeed_config(ds_path), above(flags.global_batch, from_job.global_batch),
        above(flags.micro_batch, from_job.micro_batch), above(flags.accum_steps, from_job.accum_steps));
    out.warnings.insert(out.warnings.end(), ds.warnings.begin(), ds.warnings.end());
    ds_hash = ds.hash;
    // DeepSpeed's rule needs the data-parallel world size first.
    Sourced<Count> p = flags.world_size ? flags.world_size : from_job.world_size ? from_job.world_size : env.world_size;
    CheckInputs from_ds;
    if (!p) {
      if (auto implied = check::implied_world_size(ds)) {
        p.set(*implied, fmt::format("derived: deepspeed {} train_batch_size / (train_micro_batch_size_per_gpu x "
                                    "gradient_accumulation_steps)",
                                    ds_path));
        from_ds.world_size = p;
      } else if (cluster_world) {
        p = cluster_world;
        from_ds.world_size = p;
      } else {
        throw InputError(fmt::format(
            "world_size: needed to apply DeepSpeed's batch rule to {}: pass --world-size or --cluster, set world_size "
            "in the job file, or run under torchrun/Slurm (WORLD_SIZE / SLURM_NTASKS)",
            ds_path));
      }
    }
    const check::DeepSpeedBatch batch = check::derive_deepspeed_batch(ds, *p, p.source);
    CheckInputs ds_in = check::inputs_from_deepspeed(ds, batch);
    if (const auto plan = check::deepspeed_plan(ds); plan.precision_assumed) ds_assumed_precision = plan.precision_source;
    check::overlay(ds_in, from_ds);
    check::overlay(merged, ds_in);
    if (ds.offload_optimizer || ds.offload_params)
      out.warnings.push_back(fmt::format(
          "{}: offload is modelled as state kept off the device (memory); its PCIe transfers and CPU optimizer step "
          "are not priced, so the predicted step time is a lower bound",
          ds_path));
  }
  // A framework's own config (Megatron-LM arguments, NeMo YAML, torchtitan TOML): one layer above
  // DeepSpeed's, below the job file and the flags.
  std::optional<check::FrameworkConfig> fwc;
  {
    const auto& fc = o.fw_config;
    const std::string m = !fc.megatron_args.empty() ? fc.megatron_args : job && job->megatron_args ? *job->megatron_args : "";
    const std::string n = !fc.nemo_config.empty() ? fc.nemo_config : job && job->nemo_config ? *job->nemo_config : "";
    const std::string t = !fc.torchtitan_config.empty() ? fc.torchtitan_config
                          : job && job->torchtitan_config ? *job->torchtitan_config
                                                          : "";
    if (int(!m.empty()) + int(!n.empty()) + int(!t.empty()) + int(!ds_path.empty()) + int(!fc.hf_args.empty()) +
            int(!fc.accelerate_config.empty()) + int(!fc.lightning_config.empty()) >
        1)
      throw InputError("--megatron-args, --nemo-config, --torchtitan-config, --hf-args, --accelerate-config, "
                       "--lightning-config and --deepspeed-config: give the one config the job launches with");
    if (!m.empty()) fwc = check::load_megatron_args(m);
    else if (!n.empty()) fwc = check::load_nemo_config(n);
    else if (!t.empty()) fwc = check::load_torchtitan_config(t);
    else if (!fc.hf_args.empty()) fwc = check::load_hf_training_args(fc.hf_args);
    else if (!fc.accelerate_config.empty()) fwc = check::load_accelerate_config(fc.accelerate_config);
    else if (!fc.lightning_config.empty()) fwc = check::load_lightning_config(fc.lightning_config);
    if (fwc) {
      out.warnings.insert(out.warnings.end(), fwc->warnings.begin(), fwc->warnings.end());
      ds_hash = fwc->hash;
      check::overlay(merged, fwc->inputs);
      if (!fwc->builtin_model.empty() && !flags.spec && !from_job.spec)
        merged.spec.set(fwc->builtin_model, fmt::format("{} [model] name and flavor", fwc->path));
    }
  }
  check::overlay(merged, from_job);
  check::overlay(merged, flags);
  if (!merged.world_size && cluster_world && !(merged.micro_batch && merged.accum_steps && merged.global_batch))
    merged.world_size = cluster_world;
  out.job = check::resolve(merged);
  const CheckInputs& in = out.job.inputs;

  // The cost model.
  const bool file_model = fwc && fwc->model && !in.spec && !in.profile && !in.workload && !in.torchscript;
  if (fwc && fwc->model && in.spec)
    out.warnings.push_back(fmt::format("{} describes the model, and {} gives a spec: the spec is priced", fwc->path,
                                       in.spec.source));
  if (in.spec && (in.profile || in.workload || in.torchscript))
    throw InputError(fmt::format("{} and {}: give a spec or a profile/workload, not both", in.spec.source,
                                 in.profile ? in.profile.source : in.workload ? in.workload.source : in.torchscript.source));
  if (in.workload && in.torchscript)
    throw InputError(fmt::format("{} and {}: give a workload or a TorchScript file, not both", in.workload.source,
                                 in.torchscript.source));
  if (in.mfu && !in.spec && !file_model)
    throw InputError(fmt::format("mfu (from {}): applies to a spec only", in.mfu.source));
  if (o.reprofile && (in.profile || in.spec))
    throw InputError("--reprofile applies to --workload / --torchscript without a profile");
  const std::string cluster = in.cluster ? *in.cluster : std::string();
  if (!cluster.empty()) {
    // Drift: a cluster description older than --cluster-max-age (default 90 days when it is dated).
    const double max_age = o.cluster_max_age.empty() ? 90 * 86400.0 : parse_seconds(o.cluster_max_age, "--cluster-max-age");
    if (!(max_age > 0)) throw InputError("--cluster-max-age: must be a positive duration, e.g. 30d");
    const auto w = model::cluster_age_warning(model::load_cluster(cluster), cluster, epoch_now(), max_age,
                                              !o.cluster_max_age.empty());
    if (!w.empty()) out.warnings.push_back(w);
  }
  // The one loader of predict, tune and check (cli/model_source.hpp), from the merged inputs.
  ModelSource src;
  src.cluster = cluster;
  if (!o.seq_len.empty() && !in.spec)
    throw InputError("--seq-len applies to a HuggingFace config.json (--model-config), not to a profile or workload");
  if (in.spec) {
    src.spec = *in.spec;
    src.model_config = !o.model_config.empty();
    if (!o.seq_len.empty()) src.seq_len = parse_positive_count(o.seq_len, "--seq-len");
    if (in.mfu) src.mfu = *in.mfu;
  } else if (file_model) {
    src.spec_object = *fwc->model;
    src.spec_label = fwc->path;
    if (in.mfu) src.mfu = *in.mfu;
  } else if (in.profile) {
    src.profile = *in.profile;
  } else if (in.workload || in.torchscript) {
    workloads::WorkloadConfig cfg;
    if (in.torchscript) {
      cfg.name = "torchscript";
      cfg.torchscript_path = std::filesystem::absolute(in.torchscript->path).string();
      cfg.inputs = in.torchscript->inputs;
      cfg.target = in.torchscript->target;
    } else {
      cfg = workloads::parse_workload_arg(*in.workload);
    }
    src.workload = cfg;
    // The optimizer whose state is profiled: a DeepSpeed type without an LR rule (e.g. Adagrad)
    // is measured as Adam (two state slots, the larger common case).
    src.optimizer = find_optimizer(out.job.optimizer).value_or(Optimizer::adam);
    if (!o.device_memory.empty()) src.device_memory = parse_bytes(o.device_memory, "--device-memory");
    src.reprofile = o.reprofile;
    if (in.precision) src.precision = *in.precision;
    if (in.checkpointing) src.checkpointing = *in.checkpointing;
  }
  if (in.framework) {
    src.framework = *in.framework;
    src.framework_source = in.framework.source;
  }
  if (in.grad_reduce_in_fp32) {
    src.grad_reduce_in_fp32 = *in.grad_reduce_in_fp32;
    src.grad_source = in.grad_reduce_in_fp32.source;
  }
  if (src.spec || src.spec_object || src.profile || src.workload) {
    LoadedModel l = load_model_source(src);
    if (in.profile) {
      const std::string where = in.workload ? in.workload.source : in.workload_hash ? in.workload_hash.source : "";
      std::optional<std::string> wl = in.workload ? std::optional<std::string>(*in.workload) : std::nullopt;
      if (in.torchscript) wl = "torchscript";
      check::require_profile_of(*l.profile, *in.profile, wl,
                                in.workload_hash ? std::optional<std::string>(*in.workload_hash) : std::nullopt,
                                in.torchscript ? in.torchscript.source : where);
    } else if (src.workload && in.workload_hash && l.profile->workload.hash != *in.workload_hash) {
      check::require_profile_of(*l.profile, l.source.value("path", std::string()), std::nullopt, *in.workload_hash,
                                in.workload_hash.source);
    }
    out.model = std::move(l);
  }
  if (out.model && in.precision && !ds_assumed_precision.empty() && in.precision.source == ds_assumed_precision) {
    // "auto" assumed a 16-bit run: a profile that measured only another precision prices what it measured.
    const auto& plans = out.model->model->info().plans;
    if (std::find(plans.precisions.begin(), plans.precisions.end(), *in.precision) == plans.precisions.end()) {
      out.job.precision = plans.own_precision();
      out.job.inputs.precision.set(*out.job.precision,
                                   fmt::format("{}; but {}: priced at {}", ds_assumed_precision, plans.limits,
                                               to_string(plans.own_precision())));
    }
  }
  if (out.model && !out.job.inputs.precision) {
    // Nothing chose a precision: the model's own, printed with where it came from.
    const auto& info = out.model->model->info();
    out.job.precision = info.plans.own_precision();
    out.job.inputs.precision.set(*out.job.precision,
                                 info.source == "spec" ? fmt::format("the spec's dtype ({})", in.spec ? *in.spec : "spec")
                                                       : std::string("the precision the profile measured"));
  }
  if (out.model && out.job.inputs.optimizer && out.job.inputs.optimizer.source == "default") {
    // Nothing chose an optimizer: the one the model prices (the spec's, or the profile's measured).
    const auto& info = out.model->model->info();
    out.job.optimizer = std::string(to_string(info.optimizer));
    out.job.inputs.optimizer.set(out.job.optimizer, info.source == "spec" ? fmt::format("the spec's optimizer ({})", in.spec ? *in.spec : "spec")
                                                                          : std::string("the optimizer the profile measured"));
  }
  if (out.model && out.model->model->info().device_memory > 0) {
    const auto& info = out.model->model->info();
    std::string from = info.source == "spec" ? (cluster.empty() ? std::string("the spec") : "cluster " + cluster)
                                             : std::string("the profile's device");
    if (!o.device_memory.empty()) from = "flag --device-memory";
    out.job.inputs.device_memory.set(info.device_memory, fmt::format("{} ({})", from, info.device_name.empty() ? info.device_kind : info.device_name));
  }
  if (out.model) {
    // B_noise: --noise-scale or the job file's, else a stronger one validate measured for this
    // workload, else the profile's (check 8); cli/noise_scale_cache.hpp.
    const NoiseLookup noise = lookup_noise_scale(*out.model, in.workload ? "--workload " + *in.workload : std::string());
    if (!out.job.noise_scale && noise.recorded) {
      out.job.noise_scale = noise.recorded->noise_scale;
      out.job.inputs.noise_scale.set(noise.recorded->noise_scale, noise.recorded->source);
    }
    out.job.noise_scale_hint = noise.validate_command;
  }
  out.files_hash = fmt::format("job={};deepspeed={};workload={}", job ? job->hash : "", ds_hash,
                               out.model ? out.model->model->info().workload_hash : "");
  return out;
}

nlohmann::ordered_json source_json(const nlohmann::json& s) {
  // Only the stable parts: where the model came from, not when it was made.
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  for (const char* k : {"kind", "path", "workload", "cache_key", "cached", "cluster", "mfu"})
    if (s.contains(k)) o[k] = nlohmann::ordered_json::parse(s.at(k).dump());
  return o;
}

int run_check_verdict(const CheckOptions& o);

// --json promises an object on stdout: a check that cannot run (bad input) prints an error
// verdict before the one-line error and exit 2.
int run_check(const CheckOptions& o) {
  try {
    return run_check_verdict(o);
  } catch (const InputError& e) {
    if (o.json) {
      std::cout << check::print_error_json(first_line(e.what()), kExitBadInput, GACCUM_VERSION_STRING);
      std::cout.flush();
    }
    throw;
  }
}

int run_check_verdict(const CheckOptions& o) {
  const Seconds timeout = parse_seconds(o.timeout, "--timeout");
  RankContext ctx;
  std::vector<std::string> env_warnings;
  if (o.distributed) {
    ctx = detect_rank_context();
    if (!ctx.distributed())
      throw InputError(
          "--distributed: no launcher environment (RANK/WORLD_SIZE, SLURM_PROCID/SLURM_NTASKS or mpirun's): run every "
          "rank under torchrun or srun, or drop --distributed");
  } else {
    if (o.probe_links)
      throw InputError(
          "--probe-links: the probe times the job's own allreduce, so every rank must run it: add --distributed and "
          "start check under torchrun or srun");
    try {
      ctx = detect_rank_context(/*need_rendezvous=*/false);
    } catch (const InputError& e) {
      env_warnings.push_back(fmt::format("launcher environment ignored ({})", e.what()));
      ctx = RankContext{};
    }
  }

  // --probe-links: the job's allreduce per level (profiler/link_probe.hpp), on the GPU when there
  // is one (NCCL on cuda:<local rank>), else Gloo on the CPU, inside the settings exchange's
  // connection; skipped when a rank's inputs are bad (every rank sees the same lines).
  check::C10dOptions c10d;
  std::vector<AllreducePoint> probed;
  profiler::NodeLayout probe_layout;
  double probe_tolerance = 0;
  bool probe_skipped = false;  // a rank's inputs were bad: check 3 reports it, nothing is timed
  if (o.probe_links) {
    probe_tolerance = parse_fraction(o.probe_tolerance, "--probe-tolerance");
    if (!(probe_tolerance > 0)) throw InputError("--probe-tolerance: must be above 0%, e.g. 25%");
    const auto sizes = parse_size_sweep(o.probe_sizes, "--probe-sizes");
    const Count iters = parse_positive_count(o.probe_iters, "--probe-iters");
    if (iters > 1000) throw InputError("--probe-iters: at most 1000 (the probe should be quick; 10 is the default)");
    const std::string device = workloads::resolve_device(o.probe_device);
    if (device_kind_of(device) == DeviceKind::cuda) {
      if (o.probe_device.rfind("cuda:", 0) == 0)
        throw InputError(fmt::format("--probe-device {}: under a launcher every rank uses cuda:<local rank>; give "
                                     "--probe-device cuda",
                                     o.probe_device));
      c10d.backend = Backend::nccl;
      c10d.device = fmt::format("cuda:{}", ctx.local_rank);
    }
    c10d.with_comm = [&, sizes, iters](comm::Communicator& c, const std::vector<std::string>& lines) {
      for (int r = 0; r < int(lines.size()); ++r)
        if (!check::decode_rank_settings(lines[std::size_t(r)], r).error.empty()) {
          probe_skipped = true;
          return;
        }
      probe_layout = profiler::node_layout(c, ctx);
      probed = profiler::sweep_levels(c, probe_layout, ctx, sizes, 3, static_cast<int>(iters), /*job_level=*/true,
                                      /*collectives=*/false, "check-probe")
                   .allreduce;
    };
  }

  // With --distributed, a rank whose inputs are bad still joins the exchange (so the others stop
  // at once, naming it) and then exits 2.
  std::optional<Prepared> prep;
  std::optional<check::Verdict> verdict;
  std::string error;
  check::VerdictContext vctx;
  vctx.tool_version = GACCUM_VERSION_STRING;
  vctx.strict = o.strict;
  try {
    try {
      prep = prepare(o, ctx);
    } catch (const InputError& e) {
      // A world size the job needs but nothing gave: say that the launcher's variable was there
      // but not a number, instead of "not given".
      const std::string what = e.what();
      if (!env_warnings.empty() && what.rfind("world_size: not given", 0) == 0)
        throw InputError(fmt::format("world_size: not given: {}; pass --world-size", env_warnings.front()));
      throw;
    }
    if (o.probe_links && !prep->job.inputs.cluster)
      throw InputError(
          "--probe-links: the probe is compared with a cluster description; give --cluster CLUSTER.json (e.g. one "
          "from gaccum-tune cluster fit)");
    vctx.warnings = env_warnings;
    vctx.warnings.insert(vctx.warnings.end(), prep->warnings.begin(), prep->warnings.end());
    if (prep->model) vctx.model_source = source_json(prep->model->source);
    if (o.distributed)
      vctx.rank = {{"rank", ctx.rank}, {"world_size", ctx.world_size}, {"launcher", ctx.launcher}};
    verdict = check::run_checks(prep->job, prep->model ? prep->model->model.get() : nullptr,
                                check::rank_agreement_skipped(), vctx);
  } catch (const InputError& e) {
    if (!o.distributed) throw;
    error = first_line(e.what());
  }
  if (o.distributed) {
    const std::string mine =
        error.empty() ? check::encode(check::rank_settings(prep->job, ctx.rank,
                                                           check::config_hash(prep->job, prep->files_hash)))
                      : check::encode(check::failed_rank_settings(ctx.rank, error));
    const auto lines = check::exchange_settings_c10d(ctx, mine, timeout, c10d);
    std::vector<check::RankSettings> all;
    for (int r = 0; r < int(lines.size()); ++r) all.push_back(check::decode_rank_settings(lines[r], r));
    if (!error.empty()) throw InputError(error);
    verdict->checks[2] = check::check_rank_agreement(all, ctx.world_size, ctx.launcher);
    if (o.probe_links && !probed.empty()) {
      const std::string& path = *prep->job.inputs.cluster;
      auto drift = model::compare_links(model::load_cluster(path), path, probed, probe_layout.nodes,
                                        probe_layout.ranks_per_node, probe_tolerance);
      for (const auto& w : drift.warnings) verdict->ctx.warnings.push_back(w);
      verdict->ctx.link_probe = std::move(drift);
    } else if (o.probe_links && !probe_skipped) {
      verdict->ctx.warnings.push_back(fmt::format(
          "link probe: a job of {} rank(s) on {} node(s) has no allreduce to time; --probe-links needs world_size >= 2",
          ctx.world_size, probe_layout.nodes));
    }
  }
  // Each warning once: the table lists them in its "warnings:" block; beside JSON on stdout (which
  // carries them too) they go to stderr, where a person reading a CI log sees them.
  if (o.json)
    for (const auto& w : verdict->ctx.warnings) std::cerr << "gaccum-tune: warning: " << w << "\n";
  std::cout << (o.json ? check::print_json(*verdict) : check::print_table(*verdict));
  std::cout.flush();
  return verdict->exit_code();
}

}  // namespace

void add_check_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<CheckOptions>();
  auto* sub = app.add_subcommand("check", "Pre-launch gate: check a job's batch, memory, ranks, LR and efficiency");
  sub->add_option("--job", o->job, "Job file (JSON or YAML; schema: examples/jobs/, check/job.hpp)");
  sub->add_option("--deepspeed-config", o->deepspeed_config, "DeepSpeed config (batch fields, optimizer, ZeRO)");
  add_framework_config_flags(sub, o->fw_config, "the layout, batch, recompute, precision, and the model when whole",
                             true);
  add_layout_flags(sub, o->layout);
  sub->add_option("--profile", o->profile, "Measured profile.json (from `gaccum-tune profile`)");
  sub->add_option("--spec", o->spec, "Analytic transformer spec.json, or a HuggingFace config.json (needs --cluster)");
  sub->add_option("--model-config", o->model_config,
                  "HuggingFace config.json as the model (model_type llama, mistral, qwen2, gemma, gemma2, phi3, gpt2, "
                  "gpt_neox, mixtral, qwen2_moe; needs --cluster)");
  sub->add_option("--seq-len", o->seq_len, "Sequence length of a HuggingFace config [default: its max_position_embeddings]");
  sub->add_option("--cluster", o->cluster, "Cluster description (device memory, links)");
  sub->add_option("--cluster-max-age", o->cluster_max_age,
                  "Warn when the cluster's numbers are older than this, e.g. 30d (a file without a date warns too) "
                  "[default: 90d for dated files]");
  sub->add_option("--mfu", o->mfu, "Model FLOP utilisation for --spec [default: 0.4]");
  sub->add_option("--workload", o->workload,
                  "Workload (identity check against --profile; without one it is profiled once and cached)");
  add_torchscript_flags(sub, o->ts);
  sub->add_option("--device-memory", o->device_memory,
                  "--workload / --torchscript without a profile: the emulated CPU device's memory, e.g. 512MiB");
  sub->add_option("--micro-batch,-b", o->micro_batch, "Samples per forward/backward on one rank");
  sub->add_option("--accum-steps,-k", o->accum_steps, "Micro-batches per optimizer step");
  sub->add_option("--world-size,-p", o->world_size, "Data-parallel ranks [default: WORLD_SIZE / SLURM_NTASKS]");
  sub->add_option("--global-batch", o->global_batch, "Samples per optimizer step B = b*k*p");
  sub->add_option("--strategy", o->strategy, "overlap | fused | every-step [default: overlap]");
  sub->add_option("--sharding", o->sharding,
                  "none | zero1 | zero2 | zero3 | hsdp:G (FSDP: no_shard, shard_grad_op, full_shard, hybrid_shard:G) "
                  "[default: none, or the DeepSpeed config's zero_optimization.stage]");
  sub->add_option("--precision", o->precision, "fp32 | bf16 | fp16 [default: the model's own, or the DeepSpeed config's]");
  sub->add_option("--framework", o->framework,
                  "the framework the job runs on: ddp | fsdp | fsdp2 | deepspeed | megatron | torchtitan | horovod: "
                  "a plan it refuses fails, fixes and comparisons stay within it [default: deepspeed with "
                  "--deepspeed-config, else any]");
  sub->add_option("--checkpointing", o->checkpointing, "activation checkpointing: none | selective (Megatron's) | selective-op (torchtitan's per-op) | full [default: the model's own]");
  sub->add_option("--optimizer", o->optimizer, "sgd (linear LR scaling) | adam | adamw | lamb (square-root)");
  sub->add_option("--lr", o->lr, "Learning rate the job uses");
  sub->add_option("--lr-ref", o->lr_ref, "Reference LR@BATCH known to work, e.g. 3e-4@256");
  sub->add_option("--dataset-size", o->dataset_size, "Samples per epoch");
  sub->add_flag("--drop-last", o->drop_last, "The DataLoader drops the last incomplete micro-batch");
  sub->add_option("--memory-cap", o->memory_cap, "Per-rank memory: bytes (70GiB) or a share of the device [default: 100%]");
  sub->add_option("--margin", o->margin, "Safety margin below the cap (WARN inside it) [default: 10%]");
  sub->add_option("--tolerance", o->tolerance, "Throughput tolerance vs the best setting [default: 5%]");
  sub->add_option("--lr-tolerance", o->lr_tolerance, "LR deviation before WARN [default: 10%; FAIL beyond 2x]");
  sub->add_option("--max-accum-steps", o->max_accum_steps, "Largest accum_steps the efficiency search may use [default: max(64, k)]");
  sub->add_option("--noise-scale", o->noise_scale, "Gradient noise scale B_noise in samples (overrides the profile)");
  sub->add_flag("--strict", o->strict, "Exit 1 on warnings too");
  sub->add_flag("--json", o->json, "Print one JSON object (schema gaccum-tune/check)");
  sub->add_flag("--distributed", o->distributed,
                "Run on every rank (torchrun / srun) and compare settings across ranks through c10d");
  sub->add_flag("--probe-links", o->probe_links,
                "--distributed: time the job's allreduce (whole job, inside each node, across nodes) and warn where "
                "--cluster predicts it off by more than --probe-tolerance");
  sub->add_option("--probe-tolerance", o->probe_tolerance, "--probe-links: measured/predicted beyond 1 +- this drifts [default: 25%]");
  sub->add_option("--probe-sizes", o->probe_sizes, "--probe-links: message sizes, e.g. 64K,1M,16M [default: 64K-16M*16]");
  sub->add_option("--probe-iters", o->probe_iters, "--probe-links: timed allreduces per size and level [default: 10]");
  sub->add_option("--probe-device", o->probe_device, "--probe-links: auto | cpu | cuda (auto: NCCL on cuda:<local rank> when a GPU answers)");
  sub->add_option("--timeout", o->timeout, "--distributed: rendezvous and exchange timeout [default: 60s]");
  sub->add_flag("--reprofile", o->reprofile, "Profile --workload again even when a cached profile matches");
  sub->footer(
      "Exit codes: 0 no check failed, 1 a check failed (or warned, with --strict), 2 bad input.\n"
      "Precedence: defaults < WORLD_SIZE/SLURM_NTASKS < --deepspeed-config < --job < flags.\n"
      "Checks: 1 batch arithmetic, 2 peak memory, 3 same settings on every rank (--distributed), 4 last\n"
      "accumulation window, 5 throughput vs best, 6 gradient sync strategy, 7 learning rate, 8 critical batch.");
  sub->callback([o, &action] { action = [o] { return run_check(*o); }; });
}

}  // namespace gaccum::cli
