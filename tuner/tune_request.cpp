// What/why: parsing and validation of TuneRequest and its resolution into Limits (see
// tune_request.hpp). Every error is one line naming the flag and what would be accepted.
#include "tuner/tune_request.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "model/parallel_plan.hpp"
#include "model/plan_cost.hpp"

namespace gaccum::tuner {

std::string_view to_string(Objective o) {
  switch (o) {
    case Objective::throughput:
      return "throughput";
    case Objective::cost:
      return "cost";
    case Objective::time_to_target:
      return "time-to-target";
  }
  return "?";
}

Objective parse_objective(std::string_view text, std::string_view field) {
  if (text == "throughput") return Objective::throughput;
  if (text == "cost") return Objective::cost;
  if (text == "time-to-target" || text == "time_to_target") return Objective::time_to_target;
  throw InputError(fmt::format("{}: unknown objective '{}': expected throughput, cost or time-to-target", field, text));
}

LrReference parse_lr_reference(std::string_view text, std::string_view field) {
  auto at = text.find('@');
  if (at == std::string_view::npos)
    throw InputError(fmt::format("{}: invalid value '{}': expected LR@GLOBAL_BATCH such as 3e-4@256", field, text));
  std::string lr_text(text.substr(0, at));
  char* end = nullptr;
  double lr = std::strtod(lr_text.c_str(), &end);
  if (lr_text.empty() || end != lr_text.c_str() + lr_text.size() || !std::isfinite(lr) || lr <= 0)
    throw InputError(
        fmt::format("{}: invalid learning rate '{}': expected a positive number such as 3e-4", field, lr_text));
  LrReference r;
  r.lr = lr;
  r.global_batch = parse_positive_count(text.substr(at + 1), field);
  return r;
}

void validate(TuneRequest& r) {
  if (r.global_batch_min < 1 || r.global_batch_max < r.global_batch_min)
    throw InputError(fmt::format("--global-batch: invalid target {}-{}: expected a positive batch or a range LO-HI",
                                 r.global_batch_min, r.global_batch_max));
  if (r.global_batch_max - r.global_batch_min > 1000000)
    throw InputError("--global-batch-range: at most 1000001 global batches in a range; narrow it");
  if (r.world_sizes.empty()) throw InputError("--world-sizes: at least one world size is needed");
  for (Count p : r.world_sizes)
    if (p < 1) throw InputError(fmt::format("--world-sizes: invalid world size {}: expected >= 1", p));
  std::sort(r.world_sizes.begin(), r.world_sizes.end());
  r.world_sizes.erase(std::unique(r.world_sizes.begin(), r.world_sizes.end()), r.world_sizes.end());
  if (!(r.margin >= 0 && r.margin < 1))
    throw InputError(fmt::format("--margin: invalid value {}: expected a fraction in [0%, 100%)", r.margin));
  if (r.max_accum_steps < 1) throw InputError("--max-accum-steps: expected a positive integer");
  if (r.micro_batch && *r.micro_batch < 1) throw InputError("micro_batch: a pinned micro_batch must be positive");
  if (r.accum_steps && *r.accum_steps < 1) throw InputError("accum_steps: pinned accum_steps must be positive");
  if (r.accum_steps && *r.accum_steps > r.max_accum_steps)
    throw InputError(fmt::format("accum_steps {} is pinned but --max-accum-steps is {}: raise --max-accum-steps to {}",
                                 *r.accum_steps, r.max_accum_steps, *r.accum_steps));
  if (r.noise_scale && !(*r.noise_scale > 0 && std::isfinite(*r.noise_scale)))
    throw InputError("--noise-scale: expected a positive number of samples");
  if (!(r.cost_per_device_hour >= 0 && std::isfinite(r.cost_per_device_hour)))
    throw InputError("--cost-per-device-hour: expected a non-negative number");
  if (r.top < 1) throw InputError("--top: expected a positive integer");
}

std::vector<Count> world_sizes_up_to(Count n) {
  std::vector<Count> out;
  for (Count p = 1; p <= n; ++p) out.push_back(p);
  return out;
}

Bytes apply_margin(Bytes cap, double margin) {
  constexpr Bytes kScale = 1000000;
  double ppm_f = std::round(std::clamp(margin, 0.0, 1.0) * double(kScale));
  const Bytes keep = kScale - static_cast<Bytes>(ppm_f);
  // floor(cap * keep / kScale) without overflow: cap = q kScale + r.
  return (cap / kScale) * keep + (cap % kScale) * keep / kScale;
}

Limits resolve_limits(const model::ModelInfo& info, const TuneRequest& r) {
  Limits l;
  l.notes = r.notes;
  l.device_memory = info.device_memory;
  if (!r.memory_cap.absolute && info.device_memory == 0)
    throw InputError(
        fmt::format("--memory-cap: {} is relative to the device memory, which this {} does not give; "
                    "pass bytes such as --memory-cap 20GiB",
                    r.memory_cap.to_string(), info.source.empty() ? "model" : info.source));
  l.cap = r.memory_cap.resolve(info.device_memory);
  if (info.device_memory > 0 && l.cap > info.device_memory && !r.allow_cap_above_device)
    throw InputError(fmt::format("--memory-cap: {} is above the device's {} ({}); a plan under it would not fit. Lower the "
                                 "cap, or pass --force-memory-cap if the device really has more",
                                 format_bytes(l.cap), format_bytes(info.device_memory),
                                 info.device_name.empty() ? info.source : info.device_name));
  l.limit = apply_margin(l.cap, r.margin);
  l.max_accum_steps = r.max_accum_steps;
  l.micro_batch_limit = r.allow_extrapolation ? 0 : info.measured_max_micro_batch;
  l.min_micro_batch = std::max<Count>(1, info.min_micro_batch);
  l.min_micro_batch_reason = info.min_micro_batch_reason;
  if (!r.layouts.empty()) l.layouts = r.layouts;
  if (!l.data_parallel_only() && !info.plans.layouts)
    throw InputError("--tp/--pp/--cp: tensor, pipeline and context parallel plans are priced for a --spec on a cluster "
                     "only (a profile measures data-parallel ranks)");
  std::vector<Count> dropped, not_multiple;
  Count smallest = 0;  // the smallest tp pp cp of the layouts
  for (const auto& lay : l.layouts)
    smallest = smallest == 0 ? lay.model_parallel() : std::min(smallest, lay.model_parallel());
  for (Count p : r.world_sizes) {
    if (info.max_world_size > 0 && p > info.max_world_size) {
      dropped.push_back(p);
    } else if (std::none_of(l.layouts.begin(), l.layouts.end(),
                            [&](const ParallelLayout& lay) { return p % lay.model_parallel() == 0; })) {
      not_multiple.push_back(p);
    } else {
      l.world_sizes.push_back(p);
    }
  }
  if (l.world_sizes.empty() && !not_multiple.empty())
    throw InputError(fmt::format("--world-sizes: none is a multiple of tp x pp x cp = {} ({}); give world sizes that are",
                                 smallest, to_string(l.layouts.front())));
  if (!not_multiple.empty() && smallest > 1)
    l.notes.push_back(fmt::format("{} world size(s) skipped: not a multiple of any layout's tp x pp x cp (smallest {})",
                                  not_multiple.size(), smallest));
  const std::string why = info.max_world_size_reason.empty()
                              ? fmt::format("the cluster has {} devices", info.max_world_size)
                              : info.max_world_size_reason;
  if (l.world_sizes.empty())
    throw InputError(
        fmt::format("--world-sizes: every requested world size exceeds {} (largest {}); ask for at most "
                    "--max-world-size {}",
                    why, info.max_world_size, info.max_world_size));
  if (!dropped.empty()) l.notes.push_back(fmt::format("world sizes {} skipped: {}", fmt::join(dropped, ", "), why));
  if (r.strategy) {
    l.ranked = {*r.strategy};
    l.evaluated = {*r.strategy};
    l.strategy_pinned = true;
  } else {
    l.ranked = {Strategy::overlap, Strategy::fused};
    l.evaluated = {Strategy::overlap, Strategy::fused, Strategy::every_step};
  }
  const auto& plans = info.plans;
  if (r.sharding) {
    ShardingChoice sc = *r.sharding;
    if (sc.sharding == Sharding::hsdp && sc.group == 0) {
      if (plans.gpus_per_node < 2)
        throw InputError("--sharding hsdp: this model knows no GPUs per node (no --cluster); give the group size, e.g. "
                         "--sharding hsdp:8");
      sc.group = plans.gpus_per_node;
    }
    l.shardings = {sc};
  } else {
    l.shardings = plans.auto_shardings;
  }
  if (r.precision) {
    if (std::find(plans.precisions.begin(), plans.precisions.end(), *r.precision) == plans.precisions.end())
      throw InputError(fmt::format("--precision {}: not available for this model: {}", to_string(*r.precision), plans.limits));
    l.precisions = {*r.precision};
  } else {
    l.precisions = plans.auto_precisions;
  }
  if (r.checkpointing) {
    if (std::find(plans.checkpointings.begin(), plans.checkpointings.end(), *r.checkpointing) == plans.checkpointings.end())
      throw InputError(
          fmt::format("--checkpointing {}: not available for this model: {}", to_string(*r.checkpointing), plans.limits));
    l.checkpointings = {*r.checkpointing};
  } else {
    l.checkpointings = plans.auto_checkpointings;
    // torchtitan's own selective recompute is per-op: searched for a torchtitan job (the model
    // prices it), not for frameworks that cannot run it.
    const bool op = std::find(plans.checkpointings.begin(), plans.checkpointings.end(), Checkpointing::selective_op) !=
                    plans.checkpointings.end();
    if (op && r.framework == Framework::torchtitan &&
        std::find(l.checkpointings.begin(), l.checkpointings.end(), Checkpointing::selective_op) == l.checkpointings.end())
      l.checkpointings.push_back(Checkpointing::selective_op);
  }
  l.noise_scale = r.noise_scale ? r.noise_scale : info.noise_scale;
  if (r.noise_scale)
    l.noise_scale_source = r.noise_scale_source.empty() ? std::string("flag --noise-scale") : r.noise_scale_source;
  else if (info.noise_scale)
    l.noise_scale_source = "the profile's gradient statistics";
  l.offload_optimizer = r.offload_optimizer;
  l.offload_params = r.offload_params;
  l.framework = r.framework;
  if (r.framework)
    if (auto refused = model_refusal(*r.framework, info.plans.own_module))
      throw InputError(fmt::format("{}: {}", r.framework_source.empty() ? std::string("--framework") : r.framework_source,
                                   *refused));
  if (r.framework && r.checkpointing)
    if (auto refused = checkpointing_refusal(*r.framework, *r.checkpointing))
      throw InputError(fmt::format("--checkpointing {} on {} ({}): {}; tune with --checkpointing full instead",
                                   to_string(*r.checkpointing), traits(*r.framework).display,
                                   r.framework_source.empty() ? std::string("--framework") : r.framework_source, *refused));
  if (r.framework && r.strategy && l.shardings.size() == 1 && r.layouts.size() <= 1) {
    // A pinned plan the framework refuses is bad input naming both, not an empty search.
    FrameworkPlan fp{*r.strategy, l.shardings.front(), l.precisions.size() == 1 ? l.precisions.front() : Precision::fp32,
                     r.offload_optimizer, r.offload_params, 2,
                     r.layouts.size() == 1 ? r.layouts.front() : ParallelLayout{}};
    if (auto refusal = framework_refusal(*r.framework, fp))
      throw InputError(fmt::format("--strategy {} with sharding {} on {} ({}): {}", to_string(*r.strategy),
                                   to_string(l.shardings.front()), traits(*r.framework).display,
                                   r.framework_source.empty() ? std::string("--framework") : r.framework_source,
                                   *refusal));
  }
  return l;
}

bool strategy_rankable(const Limits& l, Strategy s, Sharding sharding) {
  if (l.strategy_pinned) return true;
  if (l.framework && s == Strategy::every_step) {
    FrameworkPlan fp;
    fp.sharding = {sharding, 0};
    auto runs = [&](Strategy x) {
      fp.strategy = x;
      return framework_runs(*l.framework, fp);
    };
    if (!runs(Strategy::overlap) && !runs(Strategy::fused)) return true;  // the framework's only way
  }
  if (std::find(l.ranked.begin(), l.ranked.end(), s) != l.ranked.end()) return true;
  return s == Strategy::every_step && traits(sharding).shards_gradients;
}

std::vector<model::Config> plan_shapes(const Limits& l, Count p, bool ranked_only, const ParallelLayout& layout) {
  std::vector<model::Config> out;
  for (const auto& sh : l.shardings)
    for (Precision pr : l.precisions)
      for (Checkpointing ck : l.checkpointings)
        for (Strategy s : l.evaluated) {
          model::Config c{1, 1, p, s};
          c.sharding = sh;
          c.precision = pr;
          c.checkpointing = ck;
          c.offload_optimizer = l.offload_optimizer;
          c.offload_params = l.offload_params;
          c.layout = layout;
          if (!layout.data_parallel_only()) {
            // A pipeline reduces once per step; the data-parallel part is checked over dp.
            if (layout.pp > 1 && traits(s).every_micro_step) continue;
            if (p % layout.model_parallel() != 0 || model::plan_rejection(model::data_parallel_view(c))) continue;
          } else if (model::plan_rejection(c)) {
            continue;
          }
          if (l.framework && !framework_runs(*l.framework, model::framework_plan_any_k(c))) continue;
          // A tensor/pipeline plan that no framework runs is not offered (e.g. torchtitan's uneven
          // interleaved split with zero1, which only Megatron-LM shards so).
          if (!l.framework && !layout.data_parallel_only() && frameworks_running(model::framework_plan_any_k(c)).empty())
            continue;
          if (ranked_only && !strategy_rankable(l, s, sh.sharding)) continue;
          out.push_back(c);
        }
  return out;
}

}  // namespace gaccum::tuner
