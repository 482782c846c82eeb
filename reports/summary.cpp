// What/why: see summary.hpp.
#include "reports/summary.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gaccum::reports {
namespace {

std::string capitalised(std::string s) {
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = char(s[0] - 'a' + 'A');
  return s;
}

}  // namespace

std::string world_sizes_text(const std::vector<Count>& ps) {
  bool contiguous = ps.size() > 2;
  for (std::size_t i = 1; i < ps.size(); ++i) contiguous = contiguous && ps[i] == ps[i - 1] + 1;
  if (contiguous) return fmt::format("world_size {}..{}", ps.front(), ps.back());
  return fmt::format("world_size {}", fmt::join(ps, ", "));
}

std::string objective_value_text(const tuner::TuneResult& r, const tuner::Candidate& c) {
  const auto& l = r.search.limits;
  switch (r.search.objective) {
    case tuner::Objective::throughput:
      return fmt::format("{} samples/s", format_rate(c.prediction.throughput));
    case tuner::Objective::cost: {
      double v = tuner::objective_value(tuner::Objective::cost, c.prediction, std::nullopt);
      std::string s = fmt::format("{:.4g} GPU-s per sample", v);
      if (r.request.cost_per_device_hour > 0)
        s += fmt::format(" ({:.4g} per 1000 samples at {:g} per device-hour)", v * r.request.cost_per_device_hour / 3.6,
                         r.request.cost_per_device_hour);
      return s;
    }
    case tuner::Objective::time_to_target:
      return fmt::format("{:.4g} s per S_min step",
                         tuner::objective_value(tuner::Objective::time_to_target, c.prediction, l.noise_scale));
  }
  return "";
}

std::string headline(const tuner::TuneResult& r) {
  const auto& l = r.search.limits;
  const auto& q = r.request;
  std::size_t feasible = 0;
  for (const auto& c : r.search.candidates) feasible += c.feasible() ? 1 : 0;
  std::string target = q.exact() ? fmt::format("global_batch {}", q.global_batch_min)
                                 : fmt::format("global_batch {}-{}", q.global_batch_min, q.global_batch_max);
  std::string device = r.info.device_kind.empty() ? std::string("unknown device") : r.info.device_kind;
  if (!r.info.device_name.empty()) device += fmt::format(" ({})", r.info.device_name);
  return fmt::format(
      "{} on {}: {}, {}, memory limit {} (cap {} minus {:g}% margin), accum_steps <= {}, strategy {}{}{}, objective {}; {} "
      "configs evaluated, {} feasible, {} ranked.",
      r.info.title_name().empty() ? std::string("workload") : r.info.title_name(), device, target,
      world_sizes_text(l.world_sizes), format_bytes(l.limit), format_bytes(l.cap), q.margin * 100, l.max_accum_steps,
      q.strategy ? std::string(to_string(*q.strategy)) : std::string("auto"),
      q.framework ? fmt::format(", framework {} (plans it runs only)", traits(*q.framework).display) : std::string(),
      // One precision searched: say which (the model's own unless --precision gave it).
      l.precisions.size() == 1
          ? fmt::format(", precision {}{}", to_string(l.precisions.front()),
                        q.precision ? "" : (r.info.source == "spec" ? " (the spec's dtype)" : " (as profiled)"))
          : std::string(),
      to_string(q.objective),
      r.search.candidates.size(), feasible, r.search.ranking.size());
}

bool plans_searched(const tuner::TuneResult& r) {
  const auto& l = r.search.limits;
  return l.shardings.size() > 1 || l.precisions.size() > 1 || l.checkpointings.size() > 1 ||
         (!l.shardings.empty() && l.shardings.front().sharding != Sharding::none) ||
         (!l.precisions.empty() && l.precisions.front() != Precision::fp32) ||
         (!l.checkpointings.empty() && l.checkpointings.front() != Checkpointing::none);
}

std::string plan_cell(const model::Config& c) {
  const std::string layout = short_string(c.layout);
  return fmt::format("{}{} {} {}", layout.empty() ? "" : layout + " ", to_string(c.sharding),
                     c.precision ? to_string(*c.precision) : "-", c.checkpointing ? to_string(*c.checkpointing) : "-");
}

std::string llm_units_text(const model::Prediction& p) {
  if (p.tokens_per_s <= 0) return "";
  std::string s = fmt::format("{:.0f} tokens/s, {:.0f} tokens/s/GPU", p.tokens_per_s,
                              p.tokens_per_s / double(std::max<Count>(1, p.config.world_size)));
  if (p.compute.gpu_model)
    s += fmt::format(", {:.0f} TFLOP/s/GPU, MFU {:.0f}%", p.compute.model_flops_per_s / 1e12, 100 * p.compute.mfu);
  return s;
}

std::string recommendation(const tuner::TuneResult& r) {
  const auto& best = r.best();
  const auto& cfg = best.config();
  const auto& p = best.prediction;
  const auto& e = r.picks.front();
  std::string s = fmt::format(
      "Use micro_batch {} with accum_steps {} on {} rank{} ({}), global_batch {}: predicted {} samples/s{} at {} "
      "per step{}, peak memory {} per rank with {} headroom under the {} limit.",
      cfg.micro_batch, cfg.accum_steps, cfg.world_size, cfg.world_size == 1 ? "" : "s", to_string(cfg.strategy),
      cfg.global_batch(), format_rate(p.throughput), llm_units_text(p).empty() ? std::string() : " (" + llm_units_text(p) + ")",
      format_seconds(p.time.step_time),
      // A band only where measurements give one (a spec's is a point: nothing to print).
      format_seconds(p.step_time_lo) == format_seconds(p.step_time_hi)
          ? std::string()
          : fmt::format(" (band {}-{})", format_seconds(p.step_time_lo), format_seconds(p.step_time_hi)),
      format_bytes(p.memory.peak), format_bytes(Bytes(std::max<std::int64_t>(0, e.headroom))),
      format_bytes(r.search.limits.limit));
  if (r.search.objective != tuner::Objective::throughput)
    s += fmt::format(" Objective {}: {}.", to_string(r.search.objective), objective_value_text(r, best));
  if (plans_searched(r)) s += fmt::format(" Plan: {}.", tuner::plan_words(cfg));
  if (const std::string on = tuner::runs_on_text(p, r.request.framework); !on.empty())
    s += fmt::format(" {}.", capitalised(on));
  s += fmt::format(" Why: {}. {}.", e.binding_text, capitalised(e.comm_text));
  if (!e.compute_text.empty()) s += fmt::format(" {}.", e.compute_text);
  if (e.runner_up) s += fmt::format(" {}.", capitalised(e.runner_up_text));
  // The sync alternatives are the framework's to offer: none where it reduces one way only.
  const bool overlap_runs = [&] {
    model::Config o = cfg;
    o.strategy = Strategy::overlap;
    return !r.request.framework || framework_runs(*r.request.framework, model::framework_plan(o));
  }();
  if (!overlap_runs || cfg.world_size == 1) {
    // nothing to add
  } else if (e.every_step.applicable && cfg.accum_steps > 1 && cfg.sharding.sharding == Sharding::none)
    s += fmt::format(" Beware DDP without no_sync: every-step would cost {} more per step ({:.1f}% of throughput).",
                     format_seconds(e.every_step.extra_s), e.every_step.throughput_lost * 100);
  else if (e.every_step.applicable && cfg.accum_steps > 1)
    s += fmt::format(" Sync choice: {}.", e.every_step.text);
  if (r.lr.available) s += fmt::format(" Learning rate: {}.", r.lr.text);
  if (r.critical.available) s += fmt::format(" Critical batch: {}.", r.critical.text);
  if (r.info.device_kind == "cpu")
    s += fmt::format(" On this CPU each rank stands for one GPU ({} thread{} per rank).", r.info.threads_per_rank,
                     r.info.threads_per_rank == 1 ? "" : "s");
  return s;
}

std::string deepspeed_config_line(const tuner::TuneResult& r, const ReportContext& ctx) {
  if (ctx.deepspeed_config.empty()) return "";
  const auto& c = r.best().config();
  return fmt::format(
      "DeepSpeed config completed with the pick: {} (train_batch_size {} = train_micro_batch_size_per_gpu {} x "
      "gradient_accumulation_steps {} x world_size {}; launch on {} rank{})",
      ctx.deepspeed_config, c.global_batch(), c.micro_batch, c.accum_steps, c.world_size, c.world_size,
      c.world_size == 1 ? "" : "s");
}

}  // namespace gaccum::reports
