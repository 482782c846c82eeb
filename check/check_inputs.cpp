// What/why: see check_inputs.hpp.
#include "check/check_inputs.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum::check {
namespace {

template <class T>
void take(Sourced<T>& base, const Sourced<T>& top) {
  if (top) base = top;
}

bool checked_mul(Count a, Count b, Count& out) { return !__builtin_mul_overflow(a, b, &out); }

std::string where(const std::string& field, const std::string& source) {
  return source.empty() ? field : fmt::format("{} (from {})", field, source);
}

void check_limit(const Sourced<Count>& v, const char* field) {
  if (v && *v > kMaxSetting)
    throw InputError(fmt::format("{}: {} is implausibly large (at most {}); check the value", where(field, v.source), *v,
                                 kMaxSetting));
}

}  // namespace

double round_sig(double v) {
  if (!std::isfinite(v) || v == 0) return v;
  return std::strtod(fmt::format("{:.10g}", v).c_str(), nullptr);
}

void overlay(CheckInputs& b, const CheckInputs& t) {
  take(b.micro_batch, t.micro_batch);
  take(b.accum_steps, t.accum_steps);
  take(b.world_size, t.world_size);
  take(b.global_batch, t.global_batch);
  take(b.max_accum_steps, t.max_accum_steps);
  take(b.dataset_size, t.dataset_size);
  take(b.strategy, t.strategy);
  take(b.framework, t.framework);
  take(b.sharding, t.sharding);
  take(b.precision, t.precision);
  take(b.checkpointing, t.checkpointing);
  // A checkpointing given on top without its own fraction recomputes every layer it names.
  if (t.checkpointing && !t.recomputed_fraction) b.recomputed_fraction = Sourced<double>{};
  take(b.recomputed_fraction, t.recomputed_fraction);
  take(b.offload_optimizer, t.offload_optimizer);
  take(b.offload_params, t.offload_params);
  take(b.grad_reduce_in_fp32, t.grad_reduce_in_fp32);
  take(b.tp, t.tp);
  take(b.pp, t.pp);
  take(b.cp, t.cp);
  take(b.virtual_stages, t.virtual_stages);
  // A split given on top replaces the one below whole (its ends, or every stage).
  if (t.first_stage_layers || t.last_stage_layers || t.stage_layer_counts) {
    b.first_stage_layers = Sourced<Count>{};
    b.last_stage_layers = Sourced<Count>{};
    b.stage_layer_counts = Sourced<std::vector<Count>>{};
  }
  take(b.first_stage_layers, t.first_stage_layers);
  take(b.last_stage_layers, t.last_stage_layers);
  take(b.stage_layer_counts, t.stage_layer_counts);
  take(b.schedule, t.schedule);
  take(b.sequence_parallel, t.sequence_parallel);
  take(b.drop_last, t.drop_last);
  take(b.optimizer, t.optimizer);
  take(b.lr, t.lr);
  take(b.lr_ref, t.lr_ref);
  take(b.noise_scale, t.noise_scale);
  take(b.memory_cap, t.memory_cap);
  take(b.margin, t.margin);
  take(b.tolerance, t.tolerance);
  take(b.lr_tolerance, t.lr_tolerance);
  take(b.workload, t.workload);
  take(b.workload_hash, t.workload_hash);
  take(b.profile, t.profile);
  take(b.spec, t.spec);
  take(b.cluster, t.cluster);
  take(b.torchscript, t.torchscript);
  take(b.mfu, t.mfu);
}

CheckInputs default_inputs() {
  CheckInputs d;
  d.strategy.set(Strategy::overlap, "default (DDP with no_sync on the first accum_steps - 1 micro-steps)");
  d.optimizer.set(std::string(to_string(Optimizer::adam)), "default");
  d.sharding.set(ShardingChoice{}, "default (DDP: nothing sharded)");
  MemoryCap cap;
  cap.fraction = 1.0;
  d.memory_cap.set(cap, "default (the device memory)");
  d.margin.set(0.10, "default");
  d.tolerance.set(0.05, "default");
  d.lr_tolerance.set(0.10, "default");
  d.drop_last.set(false, "default");
  return d;
}

std::string validate_optimizer(const std::string& name, const std::string& field) {
  return std::string(to_string(parse_optimizer(name, field)));
}

CheckInputs inputs_from_job(const JobFile& j) {
  CheckInputs in;
  const std::string src = "job file " + j.path;
  auto put = [&](auto& dst, const auto& opt) {
    if (opt) dst.set(*opt, src);
  };
  put(in.micro_batch, j.micro_batch);
  put(in.accum_steps, j.accum_steps);
  put(in.world_size, j.world_size);
  put(in.global_batch, j.global_batch);
  put(in.max_accum_steps, j.max_accum_steps);
  put(in.dataset_size, j.dataset_size);
  put(in.strategy, j.strategy);
  put(in.framework, j.framework);
  put(in.sharding, j.sharding);
  put(in.precision, j.precision);
  put(in.checkpointing, j.checkpointing);
  put(in.tp, j.tp);
  put(in.pp, j.pp);
  put(in.cp, j.cp);
  put(in.virtual_stages, j.virtual_stages);
  put(in.schedule, j.schedule);
  put(in.sequence_parallel, j.sequence_parallel);
  put(in.drop_last, j.drop_last);
  if (j.optimizer) in.optimizer.set(validate_optimizer(*j.optimizer, j.path + ".optimizer"), src);
  put(in.lr, j.lr);
  put(in.lr_ref, j.lr_ref);
  put(in.noise_scale, j.noise_scale);
  put(in.memory_cap, j.memory_cap);
  put(in.margin, j.margin);
  put(in.tolerance, j.tolerance);
  put(in.lr_tolerance, j.lr_tolerance);
  put(in.workload, j.workload);
  put(in.workload_hash, j.workload_hash);
  put(in.profile, j.profile);
  put(in.spec, j.spec);
  put(in.cluster, j.cluster);
  put(in.torchscript, j.torchscript);
  put(in.mfu, j.mfu);
  return in;
}

CheckInputs inputs_from_deepspeed(const DeepSpeedConfig& ds, const DeepSpeedBatch& b) {
  CheckInputs in;
  const std::string src = "deepspeed " + ds.path;
  auto field_src = [&](const char* key, const std::string& how) {
    return how == "given" ? fmt::format("{} {}", src, key) : fmt::format("{} (DeepSpeed rule: {})", src, how);
  };
  in.global_batch.set(b.train_batch_size, field_src("train_batch_size", b.train_batch_source));
  in.micro_batch.set(b.micro_batch, field_src("train_micro_batch_size_per_gpu", b.micro_batch_source));
  in.accum_steps.set(b.accum_steps, field_src("gradient_accumulation_steps", b.accum_steps_source));
  if (ds.optimizer_type) {
    auto rule = optimizer_rule_name(*ds.optimizer_type);
    std::string raw = *ds.optimizer_type;
    for (auto& c : raw) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    in.optimizer.set(rule ? std::string(to_string(*rule)) : raw, fmt::format("{} optimizer.type \"{}\"", src, *ds.optimizer_type));
  }
  if (ds.lr) in.lr.set(*ds.lr, src + " optimizer.params.lr");
  const DeepSpeedPlan plan = deepspeed_plan(ds);
  in.strategy.set(plan.strategy, plan.strategy_source);
  in.framework.set(Framework::deepspeed, src + " (the engine that reads it)");
  in.sharding.set(plan.sharding, plan.sharding_source);
  if (plan.precision) in.precision.set(*plan.precision, plan.precision_source);
  if (plan.checkpointing) in.checkpointing.set(*plan.checkpointing, plan.checkpointing_source);
  if (ds.offload_optimizer) in.offload_optimizer.set(true, src + " zero_optimization.offload_optimizer");
  if (ds.offload_params) in.offload_params.set(true, src + " zero_optimization.offload_param");
  if (ds.dataloader_drop_last) in.drop_last.set(*ds.dataloader_drop_last, src + " dataloader_drop_last");
  return in;
}

ResolvedJob resolve(const CheckInputs& merged) {
  ResolvedJob r;
  r.inputs = merged;
  CheckInputs& in = r.inputs;
  check_limit(in.micro_batch, "micro_batch");
  check_limit(in.accum_steps, "accum_steps");
  check_limit(in.world_size, "world_size");

  // The layout: the multiplier of b x k is the data-parallel size dp = world_size / (tp pp cp).
  ParallelLayout& lay = r.layout;
  if (in.tp) lay.tp = *in.tp;
  if (in.pp) lay.pp = *in.pp;
  if (in.cp) lay.cp = *in.cp;
  if (in.virtual_stages) lay.virtual_stages = *in.virtual_stages;
  if (in.first_stage_layers) lay.first_stage_layers = *in.first_stage_layers;
  if (in.last_stage_layers) lay.last_stage_layers = *in.last_stage_layers;
  if (in.stage_layer_counts) lay.stage_layer_counts = *in.stage_layer_counts;
  if (in.schedule) lay.schedule = *in.schedule;
  else if (lay.virtual_stages > 1) lay.schedule = Schedule::interleaved_1f1b;
  if (in.sequence_parallel) lay.sequence_parallel = *in.sequence_parallel;
  for (const auto* f : {&in.tp, &in.pp, &in.cp, &in.virtual_stages})
    if (*f && (**f < 1 || **f > kMaxSetting))
      throw InputError(fmt::format("{}: {} is out of range (1..{})", f->source, **f, kMaxSetting));
  const Count mp = lay.model_parallel();
  const bool layout = mp > 1;
  const char* dp_name = layout ? "dp" : "world_size";
  if (in.world_size && *in.world_size % mp != 0)
    throw InputError(fmt::format("world_size {} ({}) is not a multiple of tp x pp x cp = {} ({}): use a multiple of {} "
                                 "GPUs",
                                 *in.world_size, in.world_size.source, mp, to_string(lay), mp));

  const bool b = bool(in.micro_batch), k = bool(in.accum_steps), p = bool(in.world_size), B = bool(in.global_batch);
  auto derive = [&](Sourced<Count>& out, Count num, Count den, const std::string& formula) {
    const Count q = den > 0 ? num / den : 0;
    if (den <= 0 || num % den != 0) {
      r.inexact = true;
      r.derivation = fmt::format("{} = {} / {}, not an integer", formula, num, den);
    } else {
      r.derivation = fmt::format("{} = {} / {} = {}", formula, num, den, q);
    }
    out.set(std::max<Count>(1, q), "derived: " + formula);
  };
  auto mul = [&](Count x, Count y, const char* what) {
    Count o = 0;
    if (!checked_mul(x, y, o)) throw InputError(fmt::format("{}: overflows 64 bits", what));
    return o;
  };
  const Count dp_given = p ? *in.world_size / mp : 0;
  if (!p) {
    if (b && k && B) {
      derive(in.world_size, *in.global_batch, mul(*in.micro_batch, *in.accum_steps, "micro_batch x accum_steps"),
             fmt::format("{} = global_batch / (micro_batch x accum_steps)", dp_name));
      if (layout) in.world_size.set(*in.world_size * mp, fmt::format("derived: dp x tp x pp x cp ({})", r.derivation));
    } else {
      throw InputError(
          "world_size: not given; pass --world-size (or --cluster: its GPU count), set world_size in the job file, or run under "
          "torchrun/Slurm (WORLD_SIZE / SLURM_NTASKS)");
    }
  } else if (!b && !B) {
    throw InputError(
        "micro_batch: not given; pass --micro-batch (or --global-batch), set micro_batch in the job file, or "
        "train_micro_batch_size_per_gpu in the DeepSpeed config");
  } else if (!k && !B) {
    in.accum_steps.set(1, "default (neither accum_steps nor global_batch given)");
  } else if (!k) {
    if (!b) in.accum_steps.set(1, "default (neither accum_steps nor micro_batch given)");
    else
      derive(in.accum_steps, *in.global_batch, mul(*in.micro_batch, dp_given, "micro_batch x world_size"),
             fmt::format("accum_steps = global_batch / (micro_batch x {})", dp_name));
  }
  if (!in.micro_batch) {
    derive(in.micro_batch, *in.global_batch, mul(*in.accum_steps, p ? dp_given : *in.world_size / mp, "accum_steps x world_size"),
           fmt::format("micro_batch = global_batch / (accum_steps x {})", dp_name));
  }
  check_limit(in.micro_batch, "micro_batch");
  check_limit(in.accum_steps, "accum_steps");
  check_limit(in.world_size, "world_size");
  r.micro_batch = *in.micro_batch;
  r.accum_steps = *in.accum_steps;
  r.world_size = *in.world_size;
  Count prod = 0;
  if (!checked_mul(r.micro_batch, r.accum_steps, prod) || !checked_mul(prod, r.world_size / mp, prod))
    throw InputError(fmt::format("micro_batch {} x accum_steps {} x {} {} overflows 64 bits", r.micro_batch,
                                 r.accum_steps, dp_name, r.world_size / mp));
  r.product = prod;
  if (!in.global_batch)
    in.global_batch.set(prod, fmt::format("derived: micro_batch x accum_steps x {}", dp_name));
  r.global_batch = *in.global_batch;

  if (in.strategy) r.strategy = *in.strategy;
  if (in.sharding) r.sharding = *in.sharding;
  if (in.precision) r.precision = *in.precision;
  if (in.checkpointing) r.checkpointing = *in.checkpointing;
  if (in.recomputed_fraction && r.checkpointing == Checkpointing::full && *in.recomputed_fraction < 1)
    r.recomputed_fraction = *in.recomputed_fraction;
  if (in.offload_optimizer) r.offload_optimizer = *in.offload_optimizer;
  if (in.offload_params) r.offload_params = *in.offload_params;
  if (r.offload_params && r.sharding.sharding != Sharding::zero3)
    throw InputError(where("offload_param", in.offload_params.source) +
                     ": DeepSpeed offloads parameters only under ZeRO stage 3 (set zero_optimization.stage 3)");
  if (r.offload_optimizer && r.sharding.sharding == Sharding::none)
    throw InputError(where("offload_optimizer", in.offload_optimizer.source) +
                     ": DeepSpeed offloads the optimizer only under ZeRO (stage 1, 2 or 3)");
  if (in.optimizer) r.optimizer = *in.optimizer;
  if (in.lr) r.lr = *in.lr;
  if (in.lr_ref) r.lr_ref = *in.lr_ref;
  if (in.dataset_size) r.dataset_size = *in.dataset_size;
  if (in.drop_last) r.drop_last = *in.drop_last;
  if (in.noise_scale) r.noise_scale = *in.noise_scale;
  if (in.memory_cap) r.memory_cap = *in.memory_cap;
  if (in.margin) r.margin = *in.margin;
  if (in.tolerance) r.tolerance = *in.tolerance;
  if (in.lr_tolerance) r.lr_tolerance = *in.lr_tolerance;
  if (in.max_accum_steps) r.max_accum_steps = *in.max_accum_steps;
  if (!(r.margin < 1)) throw InputError(where("margin", in.margin.source) + ": must be below 100%");
  return r;
}

nlohmann::ordered_json inputs_json(const CheckInputs& in) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  auto add = [&](const char* name, const auto& s, auto to_value) {
    if (s) j[name] = {{"value", to_value(*s)}, {"source", s.source}};
  };
  auto same = [](const auto& v) { return v; };
  auto real = [](double v) { return round_sig(v); };
  add("micro_batch", in.micro_batch, same);
  add("accum_steps", in.accum_steps, same);
  add("world_size", in.world_size, same);
  add("global_batch", in.global_batch, same);
  add("strategy", in.strategy, [](Strategy s) { return std::string(to_string(s)); });
  add("framework", in.framework, [](Framework f) { return std::string(to_string(f)); });
  add("sharding", in.sharding, [](const ShardingChoice& s) { return to_string(s); });
  add("precision", in.precision, [](Precision p) { return std::string(to_string(p)); });
  add("checkpointing", in.checkpointing, [](Checkpointing c) { return std::string(to_string(c)); });
  add("recomputed_fraction", in.recomputed_fraction, real);
  add("offload_optimizer", in.offload_optimizer, same);
  add("offload_param", in.offload_params, same);
  add("grad_reduce_in_fp32", in.grad_reduce_in_fp32, same);
  add("tp", in.tp, same);
  add("pp", in.pp, same);
  add("cp", in.cp, same);
  add("virtual_stages", in.virtual_stages, same);
  add("first_stage_layers", in.first_stage_layers, same);
  add("last_stage_layers", in.last_stage_layers, same);
  add("stage_layer_counts", in.stage_layer_counts, same);
  add("schedule", in.schedule, [](Schedule s) { return std::string(to_string(s)); });
  add("sequence_parallel", in.sequence_parallel, same);
  add("max_accum_steps", in.max_accum_steps, same);
  add("dataset_size", in.dataset_size, same);
  add("drop_last", in.drop_last, same);
  add("optimizer", in.optimizer, same);
  add("lr", in.lr, real);
  add("lr_ref", in.lr_ref, [](const tuner::LrReference& r) {
    return nlohmann::ordered_json{{"lr", round_sig(r.lr)}, {"global_batch", r.global_batch}};
  });
  add("noise_scale", in.noise_scale, real);
  add("memory_cap", in.memory_cap, [](const MemoryCap& c) { return c.to_string(); });
  add("device_memory", in.device_memory, same);
  add("margin", in.margin, real);
  add("tolerance", in.tolerance, real);
  add("lr_tolerance", in.lr_tolerance, real);
  add("workload", in.workload, same);
  add("workload_hash", in.workload_hash, same);
  add("profile", in.profile, same);
  add("spec", in.spec, same);
  add("cluster", in.cluster, same);
  add("torchscript", in.torchscript, [](const TorchScriptSource& t) {
    std::vector<std::string> inputs;
    for (const auto& i : t.inputs) inputs.push_back(to_text(i));
    return nlohmann::ordered_json{{"path", t.path}, {"inputs", inputs}, {"target", to_text(t.target)}};
  });
  add("mfu", in.mfu, real);
  return j;
}

}  // namespace gaccum::check
