// What/why: see deepspeed_config.hpp.
#include "check/deepspeed_config.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "check/job.hpp"
#include "check/structured_text.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace gaccum::check {
namespace {

using nlohmann::json;

constexpr const char* kTrain = "train_batch_size";
constexpr const char* kMicro = "train_micro_batch_size_per_gpu";
constexpr const char* kGas = "gradient_accumulation_steps";

// Top-level keys of DeepSpeed's config (docs: "DeepSpeed Configuration JSON").
const std::vector<std::string> kDeepSpeedKeys = {
    kTrain, kMicro, kGas, "steps_per_print", "dump_state", "optimizer", "scheduler", "fp16", "bf16", "bfloat16",
    "amp", "gradient_clipping", "prescale_gradients", "gradient_predivide_factor", "sparse_gradients",
    "zero_optimization", "zero_allow_untested_optimizer", "zero_force_ds_cpu_optimizer", "activation_checkpointing",
    "flops_profiler", "wall_clock_breakdown", "memory_breakdown", "tensorboard", "wandb", "csv_monitor", "comet",
    "comms_logger", "autotuning", "elasticity", "data_efficiency", "curriculum_learning", "data_types", "checkpoint",
    "aio", "communication_data_type", "seq_parallel_communication_data_type", "sparse_attention", "pipeline",
    "progressive_layer_drop", "eigenvalue", "compression_training", "quantize_training", "hybrid_engine", "nebula",
    "dataloader_drop_last", "disable_allgather", "vocabulary_size", "weight_quantization", "timers", "compile",
    "tensor_parallel", "torch_autocast", "graph_harvesting", "gradient_accumulation_dtype", "train_batch_size_per_gpu"};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A batch field: a positive integer, "auto" (not given), or absent.
std::optional<Count> batch_field(JsonFields& f, const char* key, std::vector<std::string>& autos) {
  if (f.has(key) && f.raw().at(key).is_string() && lower(f.raw().at(key).get<std::string>()) == "auto") {
    (void)f.any(key);
    autos.push_back(key);
    return std::nullopt;
  }
  return f.opt_positive(key);
}

bool checked_mul(Count a, Count b, Count& out) { return !__builtin_mul_overflow(a, b, &out); }

}  // namespace

DeepSpeedConfig deepspeed_from_json(const json& doc, const std::string& what) {
  JsonFields f(doc, what);
  DeepSpeedConfig c;
  c.path = what;
  c.hash = canonical_hash(doc);
  c.train_batch_size = batch_field(f, kTrain, c.auto_fields);
  c.train_micro_batch_size_per_gpu = batch_field(f, kMicro, c.auto_fields);
  c.gradient_accumulation_steps = batch_field(f, kGas, c.auto_fields);
  // "auto" batch fields are not warned about: the inputs block says where each value came from
  // (a flag, the job file or DeepSpeed's rule), and an unfillable one is an error naming the flags.
  if (const json* opt = f.opt_object("optimizer")) {
    JsonFields o(*opt, f.child("optimizer"));
    c.optimizer_type = o.opt_str("type");
    if (const json* params = o.opt_object("params")) {
      JsonFields p(*params, o.child("params"));
      if (p.has("lr")) {
        const json& lr = p.any("lr");
        if (lr.is_string() && lower(lr.get<std::string>()) == "auto")
          c.warnings.push_back(fmt::format("{}: \"auto\" (the HF Trainer fills it from --learning_rate): the learning-rate "
                                           "check needs --lr (or lr in the job file)",
                                           p.child("lr")));
        else
          c.lr = read_positive_number(lr, p.child("lr"));
      }
      // Other optimizer parameters (betas, eps, weight_decay, ...) are DeepSpeed's business.
    }
  }
  if (const json* zero = f.opt_object("zero_optimization")) {
    JsonFields z(*zero, f.child("zero_optimization"));
    if (z.has("stage")) {
      c.zero_stage = z.count("stage");
      if (c.zero_stage > 3)
        throw InputError(fmt::format("{}: ZeRO stage {} does not exist (0, 1, 2 or 3)", z.child("stage"), c.zero_stage));
    }
    if (z.has("overlap_comm")) c.overlap_comm = z.boolean("overlap_comm");
    auto offload = [&](const char* key) {
      const json* o = z.opt_object(key);
      if (!o) return false;
      JsonFields of(*o, z.child(key));
      const std::string dev = lower(of.opt_str("device").value_or("none"));
      if (dev != "none" && dev != "cpu" && dev != "nvme")
        throw InputError(fmt::format("{}: '{}' is not an offload device: expected none, cpu or nvme", of.child("device"), dev));
      return dev != "none";
    };
    c.offload_optimizer = offload("offload_optimizer");
    c.offload_params = offload("offload_param");
  }
  for (const char* key : {"bf16", "fp16"}) {
    const json* o = f.opt_object(key);
    if (!o || !o->contains("enabled")) continue;
    const json& en = o->at("enabled");
    if (en.is_string() && lower(en.get<std::string>()) == "auto") {
      c.precision_auto = true;
      c.precision_auto_keys.push_back(key);
      continue;
    }
    if (!en.is_boolean())
      throw InputError(fmt::format("{}.{}.enabled: expected true, false or \"auto\"", what, key));
    if (!en.get<bool>()) continue;
    if (c.precision)
      throw InputError(fmt::format("{}: bf16.enabled and fp16.enabled are both true; DeepSpeed allows one", what));
    c.precision = std::string(key) == "bf16" ? Precision::bf16 : Precision::fp16;
    c.precision_source = std::string(key) + ".enabled";
  }
  if (f.has("activation_checkpointing")) {
    (void)f.any("activation_checkpointing");
    c.activation_checkpointing = true;
  }
  c.dataloader_drop_last = f.opt_boolean("dataloader_drop_last");
  // Only keys DeepSpeed does not know are worth a warning; its own keys are not ours to judge.
  std::vector<std::string> unknown;
  for (const auto& k : f.unknown_keys())
    if (std::find(kDeepSpeedKeys.begin(), kDeepSpeedKeys.end(), k) == kDeepSpeedKeys.end()) unknown.push_back(k);
  std::vector<std::string> msgs;
  warn_unknown_keys(unknown, kDeepSpeedKeys, what, msgs);
  for (auto& m : msgs) c.warnings.push_back(m + " (not a DeepSpeed config key)");
  return c;
}

DeepSpeedConfig load_deepspeed_config(const std::string& path) {
  const std::string text = read_text_file(path, "--deepspeed-config");
  return deepspeed_from_json(parse_structured_text(text, TextFormat::json, path), path);
}

std::optional<Count> implied_world_size(const DeepSpeedConfig& c) {
  if (!c.train_batch_size || !c.train_micro_batch_size_per_gpu || !c.gradient_accumulation_steps) return std::nullopt;
  Count per_rank = 0;
  if (!checked_mul(*c.train_micro_batch_size_per_gpu, *c.gradient_accumulation_steps, per_rank)) return std::nullopt;
  if (*c.train_batch_size % per_rank != 0) return std::nullopt;
  return *c.train_batch_size / per_rank;
}

namespace {

// The largest divisor of n that is at most cap (1 when none larger), by trial up to sqrt(n).
Count largest_divisor_at_most(Count n, Count cap) {
  Count best = 1;
  for (Count d = 1; d <= n / d && d <= 2'000'000; ++d)
    if (n % d == 0) {
      if (d <= cap) best = std::max(best, d);
      if (n / d <= cap) best = std::max(best, n / d);
    }
  return best;
}

// The layout fix that keeps the user's global batch: train_batch_size T on p ranks is T/p samples
// per rank, split into micro x gas keeping the given micro_batch when it divides, else the largest
// gas up to the given one, else the largest micro_batch up to the given one. "" when p does not
// divide T (no layout keeps it).
std::string keep_global_batch_fix(std::optional<Count> T, std::optional<Count> M, std::optional<Count> G, Count p) {
  if (!T || *T % p != 0) return "";
  const Count per = *T / p;
  Count micro = per;
  if (M && per % *M == 0)
    micro = *M;
  else if (G)
    micro = per / largest_divisor_at_most(per, *G);
  else if (M)
    micro = largest_divisor_at_most(per, *M);
  return fmt::format("keep {} {} on world_size {} ({} sample{} per rank): set {} {} and {} {}", kTrain, *T, p, per,
                     per == 1 ? "" : "s", kMicro, micro, kGas, per / micro);
}

}  // namespace

DeepSpeedBatch derive_deepspeed_batch(const DeepSpeedConfig& c, Count p, const std::string& p_source) {
  if (p < 1) throw InputError(fmt::format("world_size: expected a positive integer, got {}", p));
  const auto& T = c.train_batch_size;
  const auto& M = c.train_micro_batch_size_per_gpu;
  const auto& G = c.gradient_accumulation_steps;
  DeepSpeedBatch d;
  d.train_batch_source = d.micro_batch_source = d.accum_steps_source = "given";
  if (T && M && G) {
    d.train_batch_size = *T, d.micro_batch = *M, d.accum_steps = *G;
  } else if (T && M) {
    d.train_batch_size = *T, d.micro_batch = *M, d.accum_steps = *T / *M / p;
    d.accum_steps_source = fmt::format("{} // {} // world_size", kTrain, kMicro);
  } else if (T && G) {
    d.train_batch_size = *T, d.accum_steps = *G, d.micro_batch = *T / p / *G;
    d.micro_batch_source = fmt::format("{} // world_size // {}", kTrain, kGas);
  } else if (M && G) {
    d.micro_batch = *M, d.accum_steps = *G;
    if (!checked_mul(*M, *G, d.train_batch_size) || !checked_mul(d.train_batch_size, p, d.train_batch_size))
      throw InputError(fmt::format("{}: {} x {} x world_size overflows 64 bits", c.path, kMicro, kGas));
    d.train_batch_source = fmt::format("{} x {} x world_size", kMicro, kGas);
  } else if (T) {
    d.train_batch_size = *T, d.accum_steps = 1, d.micro_batch = *T / p;
    d.accum_steps_source = "DeepSpeed default 1";
    d.micro_batch_source = fmt::format("{} // world_size", kTrain);
  } else if (M) {
    d.micro_batch = *M, d.accum_steps = 1;
    if (!checked_mul(*M, p, d.train_batch_size))
      throw InputError(fmt::format("{}: {} x world_size overflows 64 bits", c.path, kMicro));
    d.accum_steps_source = "DeepSpeed default 1";
    d.train_batch_source = fmt::format("{} x world_size", kMicro);
  } else if (!c.auto_fields.empty()) {
    throw InputError(fmt::format("{}: '{}' and '{}' are \"auto\" or absent and nothing fills them: pass --global-batch "
                                 "or --micro-batch (-b) with --accum-steps (-k), or set global_batch / micro_batch in the "
                                 "job file",
                                 c.path, kTrain, kMicro));
  } else {
    throw InputError(fmt::format("{}: missing required field '{}' or '{}' (DeepSpeed needs one of them)", c.path, kTrain,
                                 kMicro));
  }
  // DeepSpeed's assertion after deriving: every field positive and train == micro x gas x p.
  Count product = 0;
  const bool overflow =
      !checked_mul(d.micro_batch, d.accum_steps, product) || !checked_mul(product, p, product);
  if (d.micro_batch < 1 || d.accum_steps < 1 || overflow || product != d.train_batch_size) {
    auto shown = [](const char* key, Count v, const std::string& src) {
      return src == "given" ? fmt::format("{} {}", key, v) : fmt::format("{} {} (derived: {})", key, v, src);
    };
    // The fix: train_batch_size must be a multiple of what the given fields fix per step.
    std::string fix;
    Count unit = 0;
    std::string unit_text;
    if (T && M && G) {
      if (!overflow) fix = fmt::format("; set {} {}", kTrain, product);
    } else if (M && checked_mul(*M, p, unit)) {
      unit_text = fmt::format("{} x world_size", kMicro);
    } else if (G && checked_mul(*G, p, unit)) {
      unit_text = fmt::format("{} x world_size", kGas);
    } else if (!M && !G) {
      unit = p;
      unit_text = "world_size";
    }
    if (unit > 0) {
      const Count below = d.train_batch_size / unit * unit;
      fix = fmt::format("; set {} to a multiple of {} = {} (e.g. {})", kTrain, unit_text, unit,
                        below >= unit ? below : unit);
    }
    // The layout first (the global batch and learning rate stay), the global batch second.
    if (const std::string keep = keep_global_batch_fix(T, M, G, p); !keep.empty())
      fix = "; " + keep + (fix.empty() ? std::string() : "; or change the global batch:" + fix.substr(1));
    throw InputError(fmt::format("{}: inconsistent batch fields: {} != {} x {} x world_size {} ({}){}{}", c.path,
                                 shown(kTrain, d.train_batch_size, d.train_batch_source),
                                 shown(kMicro, d.micro_batch, d.micro_batch_source),
                                 shown(kGas, d.accum_steps, d.accum_steps_source), p, p_source,
                                 overflow ? " (overflows 64 bits)" : fmt::format(" = {}", product), fix));
  }
  return d;
}

DeepSpeedPlan deepspeed_plan(const DeepSpeedConfig& ds) {
  DeepSpeedPlan p;
  const std::string src = "deepspeed " + ds.path;
  if (ds.zero_stage >= 2) {
    p.strategy = Strategy::every_step;
    p.strategy_source = fmt::format("{} (zero_optimization.stage {}: DeepSpeed reduce-scatters the gradients into their "
                                    "partitions on every micro-step)",
                                    src, ds.zero_stage);
  } else if (ds.overlap_comm) {
    p.strategy = Strategy::overlap;
    p.strategy_source = src + " (zero_optimization.overlap_comm: reduction overlaps the last backward)";
  } else {
    p.strategy = Strategy::fused;
    p.strategy_source = src + " (DeepSpeed reduces gradients once, at the accumulation boundary)";
  }
  static const Sharding kStage[] = {Sharding::none, Sharding::zero1, Sharding::zero2, Sharding::zero3};
  p.sharding = ShardingChoice{kStage[ds.zero_stage], 0};
  p.sharding_source = fmt::format("{} zero_optimization.stage {}", src, ds.zero_stage) +
                      (ds.zero_stage == 0 ? std::string(" (or absent): plain data parallelism") : std::string());
  if (ds.precision) {
    p.precision = *ds.precision;
    p.precision_source = src + " " + ds.precision_source;
  } else if (ds.precision_auto) {
    // "auto" is filled by the HF Trainer from --bf16 / --fp16: a config that carries the section is
    // written for a 16-bit run. Priced as that run (fp16 and bf16 cost the same memory and time);
    // --precision fp32 says otherwise.
    const bool bf16 = std::find(ds.precision_auto_keys.begin(), ds.precision_auto_keys.end(), "bf16") !=
                      ds.precision_auto_keys.end();
    p.precision = bf16 ? Precision::bf16 : Precision::fp16;
    p.precision_assumed = true;
    p.precision_source = fmt::format("{} {}.enabled \"auto\" (assumed on: the HF Trainer fills it from --{}; pass "
                                     "--precision fp32 if the run trains in fp32)",
                                     src, bf16 ? "bf16" : "fp16", bf16 ? "bf16" : "fp16");
  }
  if (ds.activation_checkpointing) {
    p.checkpointing = Checkpointing::full;
    p.checkpointing_source =
        src + " activation_checkpointing (deepspeed.checkpointing of every layer assumed: full recomputation)";
  }
  return p;
}

std::optional<Optimizer> optimizer_rule_name(const std::string& type) {
  // DeepSpeed's own type names (its variants of each optimizer); our names via find_optimizer.
  const std::string t = lower(type);
  if (t == "musgd") return Optimizer::sgd;
  if (t == "muadamw") return Optimizer::adamw;
  if (t == "onebitadam" || t == "zerooneadam" || t == "muadam" || t == "fusedadam" || t == "cpuadam")
    return Optimizer::adam;
  if (t == "onebitlamb" || t == "fusedlamb") return Optimizer::lamb;
  return find_optimizer(t);
}

DeepSpeedConfig fill_auto_fields(DeepSpeedConfig c, std::optional<Count> global_batch, std::optional<Count> micro_batch,
                                 std::optional<Count> accum_steps) {
  auto is_auto = [&](const char* key) {
    return std::find(c.auto_fields.begin(), c.auto_fields.end(), key) != c.auto_fields.end();
  };
  if (is_auto(kTrain) && global_batch) c.train_batch_size = global_batch;
  if (is_auto(kMicro) && micro_batch) c.train_micro_batch_size_per_gpu = micro_batch;
  if (is_auto(kGas) && accum_steps) c.gradient_accumulation_steps = accum_steps;
  return c;
}

}  // namespace gaccum::check
