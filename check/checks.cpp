// What/why: the checks of checks.hpp. Texts are single lines with their numbers; the same
// numbers go into `data` for the JSON verdict.
#include "check/checks.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "model/parallel_plan.hpp"
#include "model/pipeline.hpp"
#include "model/plan_cost.hpp"
#include "model/prediction_json.hpp"
#include "model/recompute_mix.hpp"
#include "tuner/critical_batch.hpp"
#include "tuner/explanation.hpp"
#include "tuner/lr_advice.hpp"
#include "tuner/search.hpp"
#include "tuner/tuner.hpp"

namespace gaccum::check {
namespace {

using oj = nlohmann::ordered_json;

CheckResult make(int number, const char* id, const char* title) {
  CheckResult r;
  r.number = number;
  r.id = id;
  r.title = title;
  return r;
}

std::string pct(double f) { return fmt::format("{:.1f}%", 100.0 * f); }
std::string num(double v) { return fmt::format("{:.4g}", v); }

const char* kNoModel = "no cost model: pass --profile, --spec with --cluster, or --workload";

// Largest divisor of n that is <= cap (at least 1).
Count largest_divisor_at_most(Count n, Count cap) {
  Count best = 1;
  for (Count d : tuner::divisors(n))
    if (d <= cap) best = d;
  return best;
}

}  // namespace

model::Config job_config(const ResolvedJob& j) {
  model::Config c{j.micro_batch, j.accum_steps, j.world_size, j.strategy};
  c.sharding = j.sharding;
  c.precision = j.precision;
  c.checkpointing = j.checkpointing;
  c.offload_optimizer = j.offload_optimizer;
  c.offload_params = j.offload_params;
  c.layout = j.layout;
  return c;
}

model::Prediction job_prediction(const ResolvedJob& j, const model::CostModel& m,
                                 std::optional<RecomputeBounds>* bounds) {
  model::Prediction p = m.predict(job_config(j));
  if (!j.recomputed_fraction) return p;
  model::Config c = job_config(j);
  c.checkpointing = Checkpointing::none;
  const model::Prediction none = m.predict(c);
  if (bounds) *bounds = RecomputeBounds{p.memory.peak, none.memory.peak};
  return model::mix_recompute(std::move(p), none, *j.recomputed_fraction);
}

// Why the model refuses the job's layout (a schedule its microbatch count cannot run, heads over
// tp, ...), or "" when it runs: the model checks are skipped then and check 9 fails with the rule.
std::string layout_refusal(const ResolvedJob& j, const model::CostModel* m) {
  if (!m || j.layout.data_parallel_only()) return "";
  try {
    (void)m->predict(job_config(j));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

Bytes hard_memory_limit(const ResolvedJob& j, const model::ModelInfo& info) {
  if (!j.memory_cap.absolute && info.device_memory == 0)
    throw InputError(fmt::format("memory_cap: {} is relative to the device memory, which this {} model does not give; "
                                 "pass bytes such as --memory-cap 20GiB",
                                 j.memory_cap.to_string(), info.source));
  const Bytes cap = j.memory_cap.resolve(info.device_memory);
  return info.device_memory > 0 ? std::min(cap, info.device_memory) : cap;
}

// ---- 1 ------------------------------------------------------------------------------------------

CheckResult check_batch_arithmetic(const ResolvedJob& j) {
  CheckResult r = make(1, "batch_arithmetic", "batch arithmetic");
  const Count b = j.micro_batch, k = j.accum_steps, B = j.global_batch;
  // The multiplier of b x k: the data-parallel size (world_size without a layout).
  const Count p = j.data_parallel();
  const std::string p_name = j.layout.data_parallel_only()
                                 ? std::string("world_size")
                                 : fmt::format("dp (world_size {} / tp x pp x cp {})", j.world_size,
                                               j.layout.model_parallel());
  r.data = oj{{"micro_batch", b}, {"accum_steps", k}, {"world_size", p}, {"global_batch", B},
              {"product", j.product}, {"derivation", j.derivation}};
  if (j.consistent()) {
    r.status = Status::pass;
    r.reason = fmt::format("micro_batch {} x accum_steps {} x {} {} = global_batch {}{}", b, k, p_name, p, B,
                           j.derivation.empty() ? "" : fmt::format(" ({})", j.derivation));
    return r;
  }
  r.status = Status::fail;
  r.reason = j.inexact ? fmt::format("{}: micro_batch {} x accum_steps {} x {} {} = {} != global_batch {} ({})",
                                     j.derivation, b, k, p_name, p, j.product, B, j.inputs.global_batch.source)
                       : fmt::format("micro_batch {} x accum_steps {} x {} {} = {} != global_batch {} ({})", b, k,
                                     p_name, p, j.product, B, j.inputs.global_batch.source);
  // Settings that reach B on the same world_size, closest to what was asked; or B = b k p.
  oj sug = oj::array();
  std::vector<std::string> keep;
  auto add = [&](Count sb, Count sk) {
    sug.push_back(oj{{"micro_batch", sb}, {"accum_steps", sk}, {"world_size", j.world_size}, {"global_batch", sb * sk * p}});
  };
  if (B % p == 0) {
    const Count per_rank = B / p;
    if (per_rank % b == 0) {
      add(b, per_rank / b);
      keep.push_back(fmt::format("accum_steps {}", per_rank / b));
    }
    if (per_rank % k == 0 && per_rank / k != b) {
      add(per_rank / k, k);
      keep.push_back(fmt::format("micro_batch {}", per_rank / k));
    }
    if (keep.empty()) {
      const Count sb = largest_divisor_at_most(per_rank, b);
      add(sb, per_rank / sb);
      keep.push_back(fmt::format("micro_batch {} and accum_steps {}", sb, per_rank / sb));
    }
  }
  add(b, k);
  r.data["suggestions"] = sug;
  r.fix = keep.empty()
              ? fmt::format("global_batch {} is not a multiple of world_size {}: set global_batch {} (= b x k x p) or "
                            "another multiple of {}",
                            B, p, j.product, p)
              : fmt::format("to keep global_batch {} on {} ranks use {}; or set global_batch {} (= b x k x p)", B, p,
                            fmt::join(keep, " or "), j.product);
  return r;
}

// The job's framework (--framework, or DeepSpeed from its config): comparisons and fixes stay
// among the plans it runs (core/framework.hpp).
std::optional<Framework> job_framework(const ResolvedJob& j) {
  return j.inputs.framework ? std::optional<Framework>(*j.inputs.framework) : std::nullopt;
}

// ---- 2 ------------------------------------------------------------------------------------------

CheckResult check_memory(const ResolvedJob& j, const model::CostModel* m) {
  CheckResult r = make(2, "memory", "peak memory");
  if (!m) {
    r.reason = kNoModel;
    return r;
  }
  const auto& info = m->info();
  const Bytes hard = hard_memory_limit(j, info);
  const Bytes limit = tuner::apply_margin(hard, j.margin);
  if (const std::string why = layout_refusal(j, m); !why.empty()) {
    r.reason = "the layout cannot run as given (check 9): no memory to price";
    return r;
  }
  // A job recomputing a fraction of its layers: the bounds its estimate lies between.
  std::optional<RecomputeBounds> bounds;
  const model::Prediction pred = job_prediction(j, *m, &bounds);
  const Bytes peak = pred.memory.peak;
  const bool kept = bounds.has_value();
  const std::string partial_text =
      kept ? fmt::format(" (recomputing {:.0f}% of the layers, {}: between full recompute's {} and none's {})",
                         100 * *j.recomputed_fraction, j.inputs.recomputed_fraction.source,
                         format_bytes(bounds->full_peak), format_bytes(bounds->none_peak))
           : "";
  const bool pipeline = j.layout.pp > 1;
  // A pipeline's stages differ: the peak is its heaviest stage's, named.
  const std::string stage_text =
      pipeline ? fmt::format(" on pipeline stage {} of {} (its heaviest: {} microbatch chunks in flight)",
                             pred.parallel.peak_stage, j.layout.pp,
                             pred.parallel.stages[static_cast<std::size_t>(pred.parallel.peak_stage)].in_flight)
               : "";

  tuner::Limits lim;
  lim.limit = limit;
  const Count measured = info.measured_max_micro_batch;
  const Count upper = std::min(kMaxSetting, std::max(j.micro_batch, measured > 0 ? measured : Count(65536)));
  const Count fit = tuner::max_micro_batch_within(*m, lim, job_config(j), upper);

  r.data = oj{{"peak_memory", peak},
              {"device_memory", info.device_memory},
              {"memory_cap", hard},
              {"margin", round_sig(j.margin)},
              {"limit", limit},
              {"headroom", std::int64_t(limit) - std::int64_t(peak)},
              {"max_micro_batch_fitting", fit},
              {"searched_up_to", upper},
              {"extrapolated", pred.micro_batch_extrapolated},
              {"breakdown",
               {{"weights", pred.memory.weights},
                {"gradients", pred.memory.gradients},
                {"optimizer_state", pred.memory.optimizer_state},
                {"gathered", pred.memory.gathered},
                {"comm_buffers", pred.memory.comm_buffers},
                {"activations", pred.memory.activations}}}};
  if (kept) {
    r.data["recomputed_fraction"] = round_sig(*j.recomputed_fraction);
    r.data["peak_memory_full_recompute"] = bounds->full_peak;
    r.data["peak_memory_no_recompute"] = bounds->none_peak;
  }
  const std::string extrap =
      pred.micro_batch_extrapolated ? fmt::format(" (extrapolated above the measured micro_batch {})", measured) : "";
  const std::string cap_text = hard == info.device_memory ? fmt::format("device memory {}", format_bytes(hard))
                                                          : fmt::format("cap {}", format_bytes(hard));
  const std::string fits_text = (fit >= upper ? fmt::format("micro_batch {} or more fits", upper)
                                              : fmt::format("micro_batch up to {} fits", fit)) +
                                (kept ? " with every layer recomputed" : "");
  if (j.micro_batch < info.min_micro_batch) {
    r.status = Status::fail;
    r.reason = fmt::format("micro_batch {} is below {}, the smallest the model ran at when profiled ({}); use "
                           "micro_batch >= {}",
                           j.micro_batch, info.min_micro_batch,
                           info.min_micro_batch_reason.empty() ? "it raised below it" : info.min_micro_batch_reason,
                           info.min_micro_batch);
    return r;
  }
  if (pipeline) {
    oj stages = oj::array();
    for (const auto& st : pred.parallel.stages)
      stages.push_back(oj{{"stage", st.rank}, {"layers", st.layers}, {"in_flight", st.in_flight}, {"peak", st.memory.peak}});
    r.data["stages"] = stages;
    r.data["peak_stage"] = pred.parallel.peak_stage;
  }
  if (peak <= limit) {
    r.status = Status::pass;
    r.reason = fmt::format("predicted peak {} per rank{}{} <= {} ({} - {} margin){}; {}", format_bytes(peak), stage_text,
                           partial_text, format_bytes(limit), cap_text, pct(j.margin), extrap, fits_text);
    return r;
  }
  r.status = peak > hard ? Status::fail : Status::warn;
  r.reason = peak > hard ? fmt::format("predicted peak {} per rank{}{} > {}: out of memory{}", format_bytes(peak),
                                       stage_text, partial_text, cap_text, extrap)
                         : fmt::format("predicted peak {} per rank{}{} is inside the {} safety margin: above {} ({} - {}){}",
                                       format_bytes(peak), stage_text, partial_text, pct(j.margin), format_bytes(limit),
                                       cap_text, pct(j.margin), extrap);
  if (kept && bounds->full_peak <= limit) {
    // Recomputing the rest of the layers is the smallest change that fits.
    r.fix = fmt::format("recompute every layer: full recompute predicts {} per rank <= {} (instead of {})",
                        format_bytes(bounds->full_peak), format_bytes(limit), j.inputs.recomputed_fraction.source);
    return r;
  }
  // The smallest plan change (a ZeRO stage, then checkpointing) that fits this very setting.
  std::string plan_fix;
  if (j.world_size > 1) {
    struct Option {
      Sharding sharding;
      Strategy strategy;
    };
    const Option options[] = {{Sharding::zero1, j.strategy == Strategy::every_step ? Strategy::fused : j.strategy},
                              {Sharding::zero2, Strategy::every_step},
                              {Sharding::zero3, Strategy::every_step}};
    for (const auto& o : options) {
      if (static_cast<int>(o.sharding) <= static_cast<int>(j.sharding.sharding)) continue;
      model::Config c = job_config(j);
      c.sharding = {o.sharding, 0};
      c.strategy = o.strategy;
      if (pipeline && traits(c.strategy).every_micro_step) c.strategy = Strategy::overlap;  // a pipeline reduces once
      if (c.layout.data_parallel_only() && model::plan_rejection(c)) continue;
      const auto fw = job_framework(j);
      if (fw && !framework_runs(*fw, model::framework_plan(c))) continue;  // not a plan the job's framework runs
      model::Prediction alt;
      try {
        alt = m->predict(c);
      } catch (const InputError&) {
        continue;  // a plan the layout cannot run
      }
      if (alt.memory.peak <= limit) {
        plan_fix = fmt::format("shard the model: {} with {} predicts {} per rank <= {} ({} below the {} hard limit; {})",
                               to_string(o.sharding), to_string(o.strategy), format_bytes(alt.memory.peak),
                               format_bytes(limit), format_bytes(hard - alt.memory.peak), format_bytes(hard),
                               tuner::runs_on_text(alt, fw));
        r.data["plan_suggestion"] = model::to_ordered_json(c);
        break;
      }
    }
  }
  if (kept) plan_fix += plan_fix.empty() ? "" : ", with every layer recomputed";
  if (fit == 0) {
    r.fix = plan_fix.empty()
                ? fmt::format("even micro_batch 1 needs {} > {}: shard the model (ZeRO / FSDP) across more ranks{}, "
                              "or a device with more memory{}",
                              format_bytes([&] {
                                model::Config c = job_config(j);
                                c.micro_batch = 1;
                                c.accum_steps = model::memory_accum_steps(j.layout, j.accum_steps);
                                return m->predict(c).memory.peak;
                              }()),
                              format_bytes(limit),
                              [&] {
                                // What the job does not use yet (a job in bf16 with full recompute has neither).
                                const Precision pr = job_config(j).precision.value_or(m->info().plans.own_precision());
                                const Checkpointing ck =
                                    job_config(j).checkpointing.value_or(m->info().plans.own_checkpointing());
                                std::string s;
                                if (ck != Checkpointing::full) s += ", use full activation checkpointing";
                                if (pr == Precision::fp32) s += ", train in bf16";
                                return s;
                              }(),
                              info.device_memory == 0 || hard < info.device_memory
                                  ? ", or raise --memory-cap (up to the device memory)"
                                  : "")
                : plan_fix;
    return r;
  }
  if (j.consistent() && j.global_batch % j.data_parallel() == 0) {
    const Count per_rank = j.global_batch / j.data_parallel();
    const Count sb = largest_divisor_at_most(per_rank, fit);
    const Count sk = per_rank / sb;
    r.data["suggestion"] = oj{{"micro_batch", sb}, {"accum_steps", sk}, {"world_size", j.world_size},
                              {"global_batch", j.global_batch}};
    r.fix = fmt::format("use micro_batch {} with accum_steps {} (keeps global_batch {}; micro_batch up to {} fits {}{})",
                        sb, sk, j.global_batch, fit, format_bytes(limit), kept ? ", with every layer recomputed" : "");
    if (!plan_fix.empty()) r.fix += "; or " + plan_fix;
    if (j.max_accum_steps && sk > *j.max_accum_steps)
      r.fix += fmt::format("; that needs accum_steps above --max-accum-steps {}", *j.max_accum_steps);
  } else {
    r.fix = fmt::format("use micro_batch {} or less (fits {}{})", fit, format_bytes(limit),
                        kept ? ", with every layer recomputed" : "");
  }
  return r;
}

// ---- 4 ------------------------------------------------------------------------------------------

CheckResult check_epoch_remainder(const ResolvedJob& j) {
  CheckResult r = make(4, "epoch_remainder", "last accumulation window");
  if (!j.dataset_size) {
    r.reason = "no dataset size: pass --dataset-size (or dataset_size in the job file) to check the epoch's last window";
    return r;
  }
  const Count N = *j.dataset_size, G = j.product, b = j.micro_batch, k = j.accum_steps, p = j.world_size;
  const Count q = N / G, rem = N % G;
  r.data = oj{{"dataset_size", N}, {"global_batch", G}, {"full_steps", q}, {"leftover_samples", rem},
              {"leftover_fraction", round_sig(double(rem) / double(N))}, {"drop_last", j.drop_last}};
  if (N < G) {
    r.status = Status::fail;
    r.reason = fmt::format("dataset_size {} is smaller than one global batch {}: an epoch has no complete optimizer step",
                           N, G);
    const Count kk = N / (b * p);
    r.fix = kk >= 1 ? fmt::format("use accum_steps {} (global_batch {}) or a larger dataset", kk, b * kk * p)
                    : fmt::format("use a smaller micro_batch or world_size (b x p = {} > {})", b * p, N);
    return r;
  }
  if (rem == 0) {
    r.status = Status::pass;
    r.reason = fmt::format("dataset_size {} = {} x global_batch {}: every epoch ends on a full accumulation window", N, q,
                           G);
    return r;
  }
  const Count bp = b * p;
  const Count micro_left = j.drop_last ? rem / bp : (rem + bp - 1) / bp;  // micro-steps in the last window
  r.data["last_window_micro_steps"] = micro_left;
  r.data["accum_steps"] = k;
  // Alternatives: sizes that divide, and accum_steps near k whose global batch divides N.
  const Count down = q * G, up = (q + 1) * G;
  r.data["dataset_size_down"] = down;
  r.data["dataset_size_up"] = up;
  const Count k_max = std::max<Count>(2 * k, j.max_accum_steps.value_or(64));
  std::optional<Count> k_below, k_above;
  for (Count kk = k - 1; kk >= 1 && !k_below; --kk)
    if (N % (bp * kk) == 0) k_below = kk;
  for (Count kk = k + 1; kk <= k_max && !k_above; ++kk)
    if (N % (bp * kk) == 0) k_above = kk;
  oj alts = oj::array();
  std::vector<std::string> alt_text;
  for (auto kk : {k_below, k_above})
    if (kk) {
      alts.push_back(oj{{"accum_steps", *kk}, {"global_batch", bp * *kk}});
      alt_text.push_back(fmt::format("accum_steps {} (global_batch {})", *kk, bp * *kk));
    }
  r.data["accum_steps_dividing"] = alts;
  if (micro_left == 0) {
    r.status = Status::pass;
    r.reason = fmt::format(
        "dataset_size {} = {} x {} + {}: drop_last drops the {} leftover samples ({} of the epoch), no partial window", N,
        q, G, rem, rem, pct(double(rem) / double(N)));
    return r;
  }
  r.status = Status::warn;
  r.reason = fmt::format(
      "dataset_size {} = {} x global_batch {} + {}: each epoch ends with a partial accumulation window of {} samples "
      "({} of {} micro-steps; with loss / accum_steps its gradient is scaled by {}/{}){}",
      N, q, G, rem, rem, micro_left, k, micro_left, k,
      j.drop_last ? "; drop_last drops only the last incomplete micro-batch" : "");
  r.fix = fmt::format("step the optimizer only after full windows (drop the last {} samples{}), or use dataset_size {} or {}{}",
                      rem, j.drop_last ? "" : ", e.g. drop_last plus skipping the partial window", down, up,
                      alt_text.empty() ? "" : fmt::format(", or {}", fmt::join(alt_text, " or ")));
  return r;
}

// ---- 5 ------------------------------------------------------------------------------------------


CheckResult check_efficiency(const ResolvedJob& j, const model::CostModel* m) {
  CheckResult r = make(5, "efficiency", "throughput vs best");
  if (!m) {
    r.reason = kNoModel;
    return r;
  }
  if (!layout_refusal(j, m).empty()) {
    r.reason = "the layout cannot run as given (check 9): nothing to compare";
    return r;
  }
  const model::Prediction mine = job_prediction(j, *m);
  tuner::TuneRequest req;
  req.global_batch_min = req.global_batch_max = j.product;
  req.world_sizes = {j.world_size};
  if (!j.layout.data_parallel_only()) req.layouts = {j.layout};  // micro_batch and m within the job's layout
  req.memory_cap = MemoryCap{hard_memory_limit(j, m->info()), std::nullopt};
  req.margin = j.margin;
  req.max_accum_steps = j.max_accum_steps.value_or(std::max<Count>(64, j.accum_steps));
  req.allow_extrapolation = mine.micro_batch_extrapolated;
  req.objective = tuner::Objective::throughput;
  req.top = 1;
  // The same plan: this check compares micro_batch, accum_steps and strategy, not a change of stage.
  const model::Config resolved = mine.config;
  req.sharding = resolved.sharding;
  req.precision = resolved.precision;
  req.checkpointing = resolved.checkpointing;
  req.framework = job_framework(j);
  if (req.framework) req.framework_source = j.inputs.framework.source;
  req.allow_cap_above_device = true;
  tuner::TuneResult res;
  try {
    res = tuner::tune(*m, req);
  } catch (const InfeasibleError& e) {
    r.reason = fmt::format("the tuner found no setting within the memory limit to compare with: {}", e.what());
    return r;
  }
  const model::Prediction& best = res.best().prediction;
  const double t_mine = tuner::objective_value(tuner::Objective::throughput, mine, std::nullopt);
  const double t_best = tuner::objective_value(tuner::Objective::throughput, best, std::nullopt);
  const double gap = t_best > 0 ? 1.0 - t_mine / t_best : 0.0;
  r.data = oj{{"throughput", round_sig(t_mine)},   {"step_time", round_sig(mine.time.step_time)},
              {"best", model::to_ordered_json(best.config)},  {"best_throughput", round_sig(t_best)},
              {"best_step_time", round_sig(best.time.step_time)}, {"gap", round_sig(gap)},
              {"speedup", round_sig(t_mine > 0 ? t_best / t_mine : 0.0)}, {"tolerance", round_sig(j.tolerance)},
              {"candidates", res.search.candidates.size()}};
  const std::string best_text = tuner::short_config(best.config);
  const bool over = mine.memory.peak > res.search.limits.limit;
  r.data["over_memory_limit"] = over;
  const std::string over_text = over ? "; the job's own setting is over the memory limit (check 2)" : "";
  if (gap <= j.tolerance) {
    r.status = Status::pass;
    r.reason = gap <= 0 ? fmt::format("predicted {} samples/s: at least as fast as the best setting for global_batch {} "
                                      "on {} ranks within the memory limit ({}, {} samples/s)",
                                      format_rate(t_mine), j.product, j.world_size, best_text, format_rate(t_best))
                        : fmt::format("predicted {} samples/s is {} below the best ({}, {} samples/s), within "
                                      "the {} tolerance",
                                      format_rate(t_mine), pct(gap), best_text, format_rate(t_best), pct(j.tolerance));
    r.reason += over_text;
    return r;
  }
  r.status = Status::warn;
  r.reason = fmt::format(
      "predicted {} samples/s ({}/step) is {} below the best setting for global_batch {} on {} ranks: {} at {} "
      "samples/s ({}/step), {:.2f}x faster",
      format_rate(t_mine), format_seconds(mine.time.step_time), pct(gap), j.product, j.world_size, best_text,
      format_rate(t_best),
      format_seconds(best.time.step_time), t_best / t_mine);
  r.reason += over_text;
  const auto fw = job_framework(j);
  if (fw == Framework::deepspeed) {
    // In the config's own fields (the job's framework is DeepSpeed).
    r.fix = fmt::format("set train_micro_batch_size_per_gpu {} and gradient_accumulation_steps {}",
                        best.config.micro_batch, best.config.accum_steps);
    if (best.config.strategy != j.strategy)
      r.fix += fmt::format(" ({})", framework_setting(*fw, model::framework_plan(best)));
  } else {
    r.fix = fmt::format("use micro_batch {}, accum_steps {}, strategy {}", best.config.micro_batch,
                        best.config.accum_steps, to_string(best.config.strategy));
    if (fw) r.fix += fmt::format(" ({})", framework_setting(*fw, model::framework_plan(best)));
  }
  return r;
}

// ---- 6 ------------------------------------------------------------------------------------------

CheckResult check_strategy(const ResolvedJob& j, const model::CostModel* m) {
  CheckResult r = make(6, "strategy", "gradient sync strategy");
  const model::Config c = job_config(j);
  r.data = oj{{"strategy", std::string(to_string(j.strategy))}};
  if (j.world_size == 1) {
    r.status = Status::pass;
    r.reason = "world_size 1: no gradient synchronisation, every strategy is the same run";
    return r;
  }
  if (j.accum_steps == 1) {
    r.status = Status::pass;
    r.reason = "accum_steps 1: one micro-step per optimizer step, so every-step and overlap are the same run";
    return r;
  }
  // The job's framework: a plan it refuses fails here (the job cannot run as described), and the
  // strategies it does not run are never the fix.
  const auto fw = job_framework(j);
  auto runs = [&](Strategy s) {
    model::Config d = c;
    d.strategy = s;
    return !fw || framework_runs(*fw, model::framework_plan(d));
  };
  if (fw) r.data["framework"] = std::string(to_string(*fw));
  if (fw && !runs(j.strategy) && !j.layout.data_parallel_only()) {
    // The framework refuses the layout itself (DeepSpeed and tp, Megatron-LM and gpipe, ...).
    const FrameworkPlan fp = model::framework_plan(c);
    r.status = Status::fail;
    r.reason = fmt::format("{} cannot run {}: {}", traits(*fw).display, to_string(j.layout), *framework_refusal(*fw, fp));
    const auto others = frameworks_running(fp);
    r.fix = others.empty() ? std::string("change the layout: no framework in the table runs it")
                           : fmt::format("run it on {} ({})", framework_displays(others),
                                         framework_setting(others.front(), fp));
    return r;
  }
  if (j.layout.pp > 1) {
    r.status = Status::pass;
    r.reason = fmt::format("{}: gradients are reduced over dp once per step, after the last microbatch ({}); "
                           "every-step is not a choice",
                           to_string(j.layout), to_string(j.strategy));
    return r;
  }
  if (fw && !runs(j.strategy)) {
    r.status = Status::fail;
    r.reason = fmt::format("{} cannot run strategy {} under {}: {}", traits(*fw).display, to_string(j.strategy),
                           to_string(j.sharding), *framework_refusal(*fw, model::framework_plan(c)));
    for (Strategy s : kAllStrategies)
      if (runs(s)) {
        model::Config d = c;
        d.strategy = s;
        r.fix = fmt::format("strategy {}: {}", to_string(s), framework_setting(*fw, model::framework_plan(d)));
        break;
      }
    if (r.fix.empty())
      r.fix = fmt::format("a sharding {} runs (core/framework.hpp), or another framework", traits(*fw).display);
    return r;
  }
  // The job's framework reduces this way only: a cost to know, not a setting to change.
  const bool only_way = fw && j.strategy == Strategy::every_step && !runs(Strategy::overlap) && !runs(Strategy::fused);
  auto only_way_text = [&] {
    model::Config d = c;
    d.strategy = Strategy::overlap;
    return fmt::format("{}'s only way: {}; a cost to know, not a setting to change", traits(*fw).display,
                       *framework_refusal(*fw, model::framework_plan(d)));
  };
  if (!m) {
    if (only_way) {
      r.status = Status::pass;
      r.reason = fmt::format("every-step ({}); {} to price it", only_way_text(), "pass --profile or --spec");
    } else if (j.strategy == Strategy::every_step) {
      r.status = Status::warn;
      r.reason = fmt::format("every-step (DDP without no_sync) allreduces on each of the {} micro-steps; {} to price it",
                             j.accum_steps, "pass --profile or --spec");
      r.fix = "wrap the first accum_steps - 1 micro-steps in `with model.no_sync():` (strategy overlap)";
    } else {
      r.reason = std::string(kNoModel) + " (to price every-step against overlap)";
    }
    return r;
  }
  const tuner::StrategyPrice sp = tuner::price_every_step(*m, c, tuner::apply_margin(hard_memory_limit(j, m->info()), j.margin));
  if (traits(j.sharding.sharding).shards_gradients || !sp.applicable) {
    // Under zero2/zero3/hsdp reducing every micro-step is what keeps gradients sharded: a choice
    // of memory against communication, priced both ways; zero1 never reduces every micro-step.
    r.data["sharding"] = to_string(j.sharding);
    r.data["overlap_peak_memory"] = sp.overlap_peak;
    r.data["every_step_peak_memory"] = sp.every_step_peak;
    r.data["overlap_step_time"] = round_sig(sp.overlap_step);
    r.data["every_step_step_time"] = round_sig(sp.every_step_step);
    r.status = Status::pass;
    if (sp.applicable && only_way) {
      r.reason = fmt::format("{} under {} ({}): {}", to_string(j.strategy), to_string(j.sharding), only_way_text(), sp.text);
      return r;
    }
    if (sp.applicable && j.strategy == Strategy::every_step && runs(Strategy::overlap) && sp.overlap_fits &&
        sp.throughput_lost > j.tolerance) {
      r.status = Status::warn;
      r.fix = fmt::format("no_sync over the first {} micro-steps fits in memory under {} and is {} faster",
                          j.accum_steps - 1, to_string(j.sharding), pct(sp.throughput_lost));
    }
    r.reason = fmt::format("{} under {}: {}", to_string(j.strategy), to_string(j.sharding), sp.text);
    return r;
  }
  r.data["overlap_step_time"] = round_sig(sp.overlap_step);
  r.data["fused_step_time"] = round_sig(sp.fused_step);
  r.data["every_step_step_time"] = round_sig(sp.every_step_step);
  r.data["extra_seconds_per_step"] = round_sig(sp.extra_s);
  r.data["throughput_lost"] = round_sig(sp.throughput_lost);
  r.data["overlap_collectives"] = sp.overlap_collectives;
  r.data["every_step_collectives"] = sp.every_step_collectives;
  r.data["tolerance"] = round_sig(j.tolerance);
  const std::string numbers =
      fmt::format("+{} per step ({} vs {} s/step with overlap), {} throughput lost, {} vs {} allreduce calls per step",
                  format_seconds(sp.extra_s), num(sp.every_step_step), num(sp.overlap_step), pct(sp.throughput_lost),
                  sp.every_step_collectives, sp.overlap_collectives);
  if (j.strategy != Strategy::every_step) {
    r.status = Status::pass;
    r.reason = fmt::format("{}: gradients synchronised once per optimizer step; every-step would cost {}",
                           to_string(j.strategy), numbers);
    return r;
  }
  if (only_way) {
    r.status = Status::pass;
    r.reason = fmt::format("every-step allreduces on each of the {} micro-steps ({}): {}", j.accum_steps,
                           only_way_text(), numbers);
    return r;
  }
  r.status = sp.throughput_lost > j.tolerance ? Status::fail : Status::warn;
  r.reason = fmt::format("every-step (DDP without no_sync) allreduces on each of the {} micro-steps: {}", j.accum_steps,
                         numbers);
  if (fw) {
    // The framework's own setting for each strategy it runs instead.
    std::vector<std::string> ways;
    for (Strategy s : {Strategy::overlap, Strategy::fused})
      if (runs(s)) {
        model::Config d = c;
        d.strategy = s;
        ways.push_back(fmt::format("{} (strategy {})", framework_setting(*fw, model::framework_plan(d)), to_string(s)));
      }
    r.fix = fmt::format("reduce once per optimizer step: {}", fmt::join(ways, ", or "));
  } else {
    r.fix =
        "wrap the first accum_steps - 1 micro-steps in `with model.no_sync():` (strategy overlap), or accumulate "
        "locally and reduce once (fused)";
  }
  return r;
}

// ---- 7 ------------------------------------------------------------------------------------------

CheckResult check_learning_rate(const ResolvedJob& j) {
  CheckResult r = make(7, "learning_rate", "learning rate scaling");
  if (!j.lr || !j.lr_ref) {
    r.reason = !j.lr && !j.lr_ref ? "no learning rate and no reference: pass --lr and --lr-ref LR@BATCH"
               : !j.lr            ? "no learning rate: pass --lr (or lr in the job file / optimizer.params.lr)"
                                  : "no reference: pass --lr-ref LR@BATCH (a learning rate known to work at a global batch)";
    return r;
  }
  const std::optional<Optimizer> optimizer = find_optimizer(j.optimizer);
  if (!optimizer) {
    r.reason = fmt::format("optimizer '{}' has no scaling rule here (sgd: linear; adam, adamw, lamb: square-root)",
                           j.optimizer);
    return r;
  }
  const tuner::LrAdvice a = tuner::recommend_lr(j.lr_ref, *optimizer, j.product, j.dataset_size);
  const double ratio = *j.lr / a.lr;
  r.data = oj{{"optimizer", j.optimizer},       {"rule", a.rule},
              {"lr", round_sig(*j.lr)},         {"recommended_lr", round_sig(a.lr)},
              {"lr_ref", round_sig(a.lr_ref)},  {"batch_ref", a.batch_ref},
              {"global_batch", j.product},      {"scale", round_sig(a.scale)},
              {"ratio", round_sig(ratio)},      {"deviation", round_sig(ratio - 1.0)},
              {"tolerance", round_sig(j.lr_tolerance)}, {"fail_factor", kLrFailFactor},
              {"warmup", a.warmup},
              {"warmup_steps", a.warmup_steps ? oj(*a.warmup_steps) : oj(nullptr)}};
  const std::string rule = fmt::format("{} scaling for {}: {:.3g} x {}{}/{}{} = {:.3g}", a.rule, j.optimizer, a.lr_ref,
                                       a.rule == "linear" ? "" : "sqrt(", j.product, a.batch_ref,
                                       a.rule == "linear" ? "" : ")", a.lr);
  const double dev = std::fabs(ratio - 1.0);
  if (dev <= j.lr_tolerance) {
    r.status = Status::pass;
    r.reason = fmt::format("lr {:.3g} matches {} (within {})", *j.lr, rule, pct(j.lr_tolerance));
    return r;
  }
  std::string hint;
  if (*j.lr == a.lr_ref && a.batch_ref != j.product)
    hint = fmt::format("; it equals the reference lr of global_batch {}: not scaled", a.batch_ref);
  else if (a.rule == "square-root" && std::fabs(*j.lr / (a.lr_ref * double(j.product) / double(a.batch_ref)) - 1) < 0.01)
    hint = "; it is linearly scaled, Adam-type optimizers use square-root scaling";
  else if (a.rule == "linear" && std::fabs(*j.lr / (a.lr_ref * std::sqrt(double(j.product) / double(a.batch_ref))) - 1) < 0.01)
    hint = "; it is square-root scaled, SGD uses linear scaling";
  r.status = (ratio > kLrFailFactor || ratio < 1.0 / kLrFailFactor) ? Status::fail : Status::warn;
  r.reason = fmt::format("lr {:.3g} is {:.2f}x the {}{}", *j.lr, ratio, rule, hint);
  r.fix = fmt::format("set lr {:.3g}{}", a.lr,
                      a.warmup ? (a.warmup_steps ? fmt::format(" with a linear warm-up over ~{} steps", *a.warmup_steps)
                                                 : std::string(" with a linear warm-up over ~5 epochs"))
                               : std::string());
  return r;
}

// ---- 8 ------------------------------------------------------------------------------------------

CheckResult check_critical_batch(const ResolvedJob& j, const model::CostModel* m) {
  CheckResult r = make(8, "critical_batch", "critical batch size");
  std::optional<double> noise = j.noise_scale;
  std::string source = j.noise_scale ? j.inputs.noise_scale.source : std::string();
  if (!noise && m && m->info().noise_scale) {
    noise = m->info().noise_scale;
    source = "the profile's gradient statistics";
  }
  if (!noise) {
    r.reason = j.noise_scale_hint.empty()
                   ? std::string("no gradient noise scale: pass --noise-scale N or use a profile with gradient statistics")
                   : fmt::format("no gradient noise scale for this workload: measure it with `{}` (check and tune on "
                                 "this workload then use it) or pass --noise-scale N",
                                 tuner::noise_scale_command(j.noise_scale_hint, j.micro_batch, j.accum_steps,
                                                            j.world_size));
    return r;
  }
  const tuner::CriticalBatchAdvice a = tuner::critical_batch_advice(noise, j.product);
  r.data = oj{{"noise_scale", round_sig(a.noise_scale)}, {"noise_scale_source", source},
              {"global_batch", j.product},               {"exceeds", a.exceeds},
              {"steps_factor", round_sig(a.steps_factor)}, {"samples_factor", round_sig(a.samples_factor)},
              {"extra_samples", round_sig(a.extra_samples)}};
  if (!a.exceeds) {
    r.status = Status::pass;
    r.reason = fmt::format(
        "global_batch {} <= B_noise ~ {:.0f} ({}): {:.2f}x the minimum samples, {:.2f}x the minimum steps to a target "
        "loss",
        j.product, a.noise_scale, source, a.samples_factor, a.steps_factor);
    return r;
  }
  r.status = Status::warn;
  r.reason = fmt::format(
      "global_batch {} exceeds the critical batch B_noise ~ {:.0f} ({}): reaching a target loss takes {:.2f}x the "
      "minimum samples ({:.2f}x extra) for {:.2f}x the minimum steps (McCandlish et al. 2018)",
      j.product, a.noise_scale, source, a.samples_factor, a.extra_samples, a.steps_factor);
  const Count bp = j.micro_batch * j.world_size;
  const Count kk = std::max<Count>(1, static_cast<Count>(std::floor(a.noise_scale / double(bp))));
  r.data["suggestion"] = oj{{"accum_steps", kk}, {"global_batch", bp * kk}};
  r.fix = bp * kk <= a.noise_scale
              ? fmt::format("lower global_batch toward B_noise: accum_steps {} gives global_batch {}", kk, bp * kk)
              : fmt::format("lower micro_batch x world_size ({}) below B_noise ~ {:.0f}", bp, a.noise_scale);
  return r;
}

// ---- 9 ------------------------------------------------------------------------------------------

CheckResult check_layout(const ResolvedJob& j, const model::CostModel* m) {
  CheckResult r = make(9, "layout", "tensor / pipeline layout");
  const ParallelLayout& l = j.layout;
  r.data = oj{{"tp", l.tp}, {"pp", l.pp}, {"cp", l.cp}, {"dp", j.data_parallel()}, {"virtual_stages", l.virtual_stages},
              {"schedule", l.pp > 1 ? oj(std::string(to_string(l.schedule))) : oj(nullptr)},
              {"sequence_parallel", l.sequence_parallel}, {"microbatches", j.accum_steps}};
  // The schedule's own rule needs no model: m microbatches on pp stages.
  std::string why;
  if (l.pp > 1)
    if (auto s = model::schedule_rejection(l.schedule, l.pp, l.virtual_stages, j.accum_steps)) why = *s;
  if (why.empty()) why = layout_refusal(j, m);
  if (!why.empty()) {
    r.status = Status::fail;
    r.reason = fmt::format("{} cannot run as given: {}", to_string(l), why);
    // The fix keeps the global batch where it can (a micro_batch whose m the schedule runs),
    // else the nearest global batch it runs at this micro_batch.
    const bool schedule_rule = l.pp > 1 && model::schedule_rejection(l.schedule, l.pp, l.virtual_stages, j.accum_steps);
    if (schedule_rule) {
      const Count dp = std::max<Count>(1, j.data_parallel());
      const Count per_rank = j.global_batch / dp;
      Count best_b = 0;
      for (Count b : tuner::divisors(per_rank))
        if (!model::schedule_rejection(l.schedule, l.pp, l.virtual_stages, per_rank / b)) best_b = b;
      if (best_b > 0 && j.global_batch % dp == 0) {
        r.fix = fmt::format("micro_batch {} x accum_steps {} keeps global_batch {} and the {} schedule runs it", best_b,
                            per_rank / best_b, j.global_batch, to_string(l.schedule));
      } else {
        Count mm = std::max(j.accum_steps, l.pp);
        while (model::schedule_rejection(l.schedule, l.pp, l.virtual_stages, mm)) ++mm;
        r.fix = fmt::format("global_batch {} (micro_batch {} x m {} x dp {}) is the nearest the {} schedule runs; or "
                            "fewer pipeline stages",
                            j.micro_batch * mm * dp, j.micro_batch, mm, dp, to_string(l.schedule));
      }
    } else {
      r.fix = "change the layout as the rule says (--tp, --pp, --virtual-stages, --schedule)";
    }
    return r;
  }
  if (!m) {
    r.status = Status::pass;
    r.reason = fmt::format("{}: the schedule runs m = {} microbatches ({} to price its bubble)", to_string(l),
                           j.accum_steps, "pass --spec");
    return r;
  }
  const model::Prediction p = job_prediction(j, *m);
  r.data["bubble_fraction"] = round_sig(p.parallel.bubble_fraction);
  r.data["peak_stage"] = p.parallel.peak_stage;
  r.status = Status::pass;
  // Layers the job does not split itself, split by its framework (torchtitan's pipeline builder).
  const ParallelLayout& priced = p.config.layout;
  Count layers = 0;  // the model's: every pipeline rank's layers
  for (const auto& st : p.parallel.stages) layers += st.layers;
  const std::vector<Count> split = l.pp > 1 && layers > 0 ? model::stage_layers(priced, layers) : std::vector<Count>{};
  if (priced.uneven_split() && !split.empty()) r.data["stage_layers"] = split;
  const std::string split_text =
      split.empty() || !priced.uneven_split() ? ""
      : !l.uneven_split() ? fmt::format(" (the layers split as torchtitan splits them, model stage by stage: {})",
                                        layer_counts_text(split))
                          : fmt::format(" (layers per model stage: {})", layer_counts_text(split));
  r.reason = l.pp > 1 ? fmt::format("{} x dp {}: m = {} microbatches, bubble {} of the schedule, peak memory on stage {}{}",
                                    to_string(l), j.data_parallel(), j.accum_steps, pct(p.parallel.bubble_fraction),
                                    p.parallel.peak_stage, split_text)
                      : fmt::format("{} x dp {}: tensor/context-parallel collectives {} per step on the critical path",
                                    to_string(l), j.data_parallel(), format_seconds(p.parallel.tp_comm + p.parallel.cp_comm));
  // A large bubble: more microbatches (a smaller micro_batch) or interleaving shrink it.
  if (l.pp > 1 && p.parallel.bubble_fraction > 0.25) {
    r.status = Status::warn;
    r.fix = fmt::format("the bubble is (pp - 1) / (m + pp - 1) for 1f1b: more microbatches per step (a smaller "
                        "micro_batch, or a larger global batch) or virtual stages (interleaved-1f1b) shrink it");
  }
  return r;
}

}  // namespace gaccum::check
