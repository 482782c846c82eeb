// What/why: the orchestration of tuner.hpp: validate, resolve limits, search, explain, advise.
#include "tuner/tuner.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "model/parallel_plan.hpp"
#include "model/plan_cost.hpp"
#include "tuner/infeasibility.hpp"

namespace gaccum::tuner {
namespace {

// The curve is drawn for the best pick's plan at every world size (DDP where the plan cannot run,
// e.g. sharding at world_size 1), with the first ranked strategy.
std::vector<MemoryCurvePoint> memory_curve(const model::CostModel& model, const SearchResult& res,
                                           const model::Config& best) {
  const auto& l = res.limits;
  Count max_b = 1;
  for (const auto& c : res.candidates) max_b = std::max(max_b, c.config().micro_batch);
  std::vector<MemoryCurvePoint> out;
  const Count measured = model.info().measured_max_micro_batch;
  for (Count p : l.world_sizes) {
    if (p % best.layout.model_parallel() != 0) continue;  // the pick's layout does not divide it
    model::Config shape = best;
    shape.world_size = p;
    shape.strategy = best.sharding.sharding == Sharding::none ? l.ranked.front() : best.strategy;
    auto rejected = [](const model::Config& c) {
      return c.layout.data_parallel_only() ? bool(model::plan_rejection(c))
                                           : bool(model::plan_rejection(model::data_parallel_view(c)));
    };
    if (rejected(shape)) shape.sharding = {};
    if (rejected(shape)) shape.strategy = l.ranked.front();
    // Up to a little past where the limit is crossed, so the crossing is readable on the chart.
    const Count fit = max_micro_batch_within(model, l, shape, max_b);
    const Count upper = std::min(max_b, std::max<Count>({2 * (fit + 1), measured, 8}));
    std::set<Count> bs;
    for (Count b = 1; b <= upper; b *= 2) bs.insert(b);
    bs.insert(upper);
    if (fit >= 1) bs.insert(fit);
    if (fit >= 1 && fit < upper) bs.insert(fit + 1);
    for (Count b : bs) {
      MemoryCurvePoint pt;
      pt.world_size = p;
      pt.micro_batch = b;
      model::Config c = shape;
      c.micro_batch = b;
      if (c.layout.pp > 1) c.accum_steps = model::memory_accum_steps(c.layout, c.accum_steps);
      try {
        pt.peak = model.predict(c).memory.peak;
      } catch (const InputError&) {
        continue;  // a layout this world size cannot run
      }
      pt.extrapolated = model.info().measured_max_micro_batch > 0 && b > model.info().measured_max_micro_batch;
      out.push_back(pt);
    }
  }
  return out;
}

// The distinct (b, k, p > 1) settings of the best ranked configs, up to n.
std::vector<PricedSetting> strategy_prices(const model::CostModel& model, const SearchResult& res, std::size_t n) {
  std::vector<PricedSetting> out;
  for (std::uint32_t i : res.ranking) {
    if (out.size() >= n) break;
    model::Config c = res.candidates[i].config();
    if (c.world_size < 2) continue;
    c.strategy = Strategy::overlap;
    bool seen = false;
    for (const auto& s : out)
      seen = seen || (s.config.micro_batch == c.micro_batch && s.config.accum_steps == c.accum_steps &&
                      s.config.world_size == c.world_size && s.config.sharding.sharding == c.sharding.sharding &&
                      s.config.precision == c.precision && s.config.checkpointing == c.checkpointing);
    if (seen) continue;
    PricedSetting ps{c, price_every_step(model, c, res.limits.limit)};
    if (ps.price.applicable) out.push_back(ps);  // zero1 has no every-step to price
  }
  return out;
}

// For each plan axis value other than the best pick's (every sharding, precision and
// checkpointing searched): its best ranked config at the best pick's global batch, or why none fits.
std::vector<PlanAlternative> plan_alternatives(const SearchResult& res) {
  std::vector<PlanAlternative> out;
  if (res.ranking.empty()) return out;
  const Candidate& best = res.candidates[res.ranking.front()];
  const model::Config& bc = best.config();
  const Count B = bc.global_batch();
  auto consider = [&](const char* axis, const std::string& value, auto&& matches) {
    PlanAlternative a;
    a.axis = axis;
    a.value = value;
    for (std::uint32_t i : res.ranking) {
      const auto& c = res.candidates[i];
      if (c.config().global_batch() == B && matches(c.config())) {
        a.best = i;
        break;
      }
    }
    for (const auto& c : res.candidates)
      if (c.config().global_batch() == B && matches(c.config()) && (a.min_peak == 0 || c.prediction.memory.peak < a.min_peak)) {
        a.min_peak = c.prediction.memory.peak;
        a.min_peak_config = c.config();
      }
    if (a.best) {
      const auto& c = res.candidates[*a.best];
      const double d = best.prediction.throughput > 0 ? c.prediction.throughput / best.prediction.throughput - 1 : 0;
      a.text = fmt::format("{} {}: best #{} {} at {:.4g} samples/s ({:+.1f}%), peak {}", axis, value, c.rank,
                           short_config(c.config()), c.prediction.throughput, d * 100, format_bytes(c.prediction.memory.peak));
    } else if (a.min_peak > 0) {
      a.text = fmt::format("{} {}: nothing feasible; its smallest peak is {} ({}) > limit {}", axis, value,
                           format_bytes(a.min_peak), short_config(a.min_peak_config), format_bytes(res.limits.limit));
    } else {
      return;
    }
    out.push_back(std::move(a));
  };
  for (const auto& sh : res.limits.shardings)
    if (sh.sharding != bc.sharding.sharding)
      consider("sharding", to_string(sh), [&](const model::Config& c) { return c.sharding.sharding == sh.sharding; });
  for (Precision p : res.limits.precisions)
    if (!bc.precision || p != *bc.precision)
      consider("precision", std::string(to_string(p)), [&](const model::Config& c) { return c.precision == p; });
  for (Checkpointing k : res.limits.checkpointings)
    if (!bc.checkpointing || k != *bc.checkpointing)
      consider("checkpointing", std::string(to_string(k)), [&](const model::Config& c) { return c.checkpointing == k; });
  return out;
}

// With nothing feasible: for each pinned plan axis, search again with it free and name the plan
// of the best feasible config, with its peak.
std::vector<std::string> plan_relaxations(const model::CostModel& model, const TuneRequest& req) {
  std::vector<std::string> out;
  auto try_free = [&](TuneRequest r, const char* flag) {
    try {
      const SearchResult res = search(model, r);
      if (res.ranking.empty()) return;
      const auto& c = res.candidates[res.ranking.front()];
      out.push_back(fmt::format("{} {} ({}, peak {})", flag, [&] {
        const auto& cfg = c.config();
        if (std::string(flag) == "--sharding") return to_string(cfg.sharding);
        if (std::string(flag) == "--precision") return std::string(to_string(*cfg.precision));
        return std::string(to_string(*cfg.checkpointing));
      }(), short_config(c.config()), format_bytes(c.prediction.memory.peak)));
    } catch (const InputError&) {
    }
  };
  if (req.sharding) {
    TuneRequest r = req;
    r.sharding.reset();
    try_free(r, "--sharding");
  }
  if (req.precision) {
    TuneRequest r = req;
    r.precision.reset();
    try_free(r, "--precision");
  }
  if (req.checkpointing) {
    TuneRequest r = req;
    r.checkpointing.reset();
    try_free(r, "--checkpointing");
  }
  return out;
}

}  // namespace

TrustCaveat trust_caveat(const SearchResult& res) {
  TrustCaveat t;
  if (res.ranking.empty()) return t;
  const Candidate& pick = res.candidates[res.ranking.front()];
  t.pick_unconfirmed = pick.prediction.unconfirmed;
  t.pick_confirmed = t.pick_unconfirmed.empty();
  for (std::size_t r = 1; r < res.ranking.size() && !t.other; ++r) {
    const Candidate& c = res.candidates[res.ranking[r]];
    if (c.prediction.unconfirmed.empty() == t.pick_confirmed) continue;
    t.other = res.ranking[r];
    if (t.pick_confirmed) t.other_unconfirmed = c.prediction.unconfirmed;
  }
  if (t.pick_confirmed && !t.other) return t;  // nothing the ranking read was unconfirmed
  t.applies = true;
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size() && i < 3; ++i) s += (i ? "; " : "") + v[i];
    if (v.size() > 3) s += fmt::format("; and {} more", v.size() - 3);
    return s;
  };
  std::string other_text;
  if (t.other) {
    const Candidate& o = res.candidates[*t.other];
    // score: lower is better (objective_score); the lead in the objective's own direction.
    t.lead = o.score != 0 ? std::abs(o.score - pick.score) / std::abs(o.score) : 0;
    other_text = fmt::format("#{} {} ({:.4g} samples/s, peak {})", o.rank, short_config(o.config()),
                             o.prediction.throughput, format_bytes(o.prediction.memory.peak));
  }
  if (!t.pick_confirmed) {
    t.text = fmt::format("CAVEAT: the pick is priced from measurements the profile could not confirm ({}).", list(t.pick_unconfirmed));
    t.text += t.other ? fmt::format(" The best config priced from confirmed measurements only is {}, {:.1f}% behind the "
                                    "pick on the objective: if the unconfirmed numbers are off by more than that, it is "
                                    "the better choice.",
                                    other_text, 100 * t.lead)
                      : std::string(" No ranked config is priced from confirmed measurements only.");
  } else {
    t.text = fmt::format("CAVEAT: the pick beat configs priced from measurements the profile could not confirm ({}); the "
                         "best of them is {}, {:.1f}% behind the pick on the objective: if the disturbance slowed those "
                         "measurements by more than that, it is the better choice.",
                         list(t.other_unconfirmed), other_text, 100 * t.lead);
  }
  t.text += " Profile again on a quiet machine (`profile --require-quiet` refuses to write a profile like this one).";
  return t;
}

TuneResult tune(const model::CostModel& model, TuneRequest request) {
  validate(request);
  TuneResult r;
  r.info = model.info();
  const Limits limits = resolve_limits(r.info, request);
  r.search = search(model, request, limits);
  r.request = std::move(request);
  const auto& req = r.request;
  if (r.search.ranking.empty()) {
    Infeasibility why = diagnose_infeasible(model, req, limits);
    // A pinned plan axis that, freed, makes a config feasible is the change to name first.
    for (const auto& change : plan_relaxations(model, req)) why.changes.insert(why.changes.begin(), change);
    throw InfeasibleError(why.message());
  }

  r.pareto = pareto_front(r.search, r.request.global_batch_min, r.request.global_batch_max);
  const std::size_t n = std::min<std::size_t>(std::size_t(req.top), r.search.ranking.size());
  for (std::size_t i = 0; i < n; ++i) r.picks.push_back(explain(model, r.search, r.pareto, i, req.margin));
  const Count B = r.best().config().global_batch();
  r.lr = recommend_lr(req.lr_reference, req.optimizer, B, req.dataset_size);
  const auto& bc = r.best().config();
  r.critical = critical_batch_advice(
      limits.noise_scale, B, limits.noise_scale_source,
      req.noise_scale_hint.empty()
          ? std::string()
          : noise_scale_command(req.noise_scale_hint, bc.micro_batch, bc.accum_steps, bc.world_size));
  r.memory_curve = memory_curve(model, r.search, r.best().config());
  r.plan_alternatives = plan_alternatives(r.search);
  r.strategy_prices = strategy_prices(model, r.search, 6);
  r.trust = trust_caveat(r.search);

  r.notes = limits.notes;
  if (r.info.device_kind == "cpu")
    r.notes.push_back(fmt::format("CPU profile: each rank stands for one GPU and ran with {} thread{} per rank",
                                  r.info.threads_per_rank, r.info.threads_per_rank == 1 ? "" : "s"));
  if (!req.strategy)
    r.notes.push_back(
        "--strategy auto: overlap and fused are ranked; every-step (allreduce on every micro-step) is "
        "evaluated and priced but not ranked; world_size 1 synchronises nothing, so one strategy is "
        "evaluated there");
  if (!req.strategy && limits.shardings.size() + limits.precisions.size() + limits.checkpointings.size() > 3)
    r.notes.push_back(
        "plans searched: every-step is ranked under zero2/zero3/hsdp, where reducing gradients on every micro-step "
        "is what keeps them sharded");
  if (limits.shardings.size() > 1 || limits.shardings.front().sharding != Sharding::none)
    r.notes.push_back("sharded collectives: " + r.info.plans.sharded_comm);
  if (r.search.indivisible_pairs > 0)
    r.notes.push_back(
        fmt::format("{} (global_batch, world_size) pair{} skipped: {} does not divide the global "
                    "batch",
                    r.search.indivisible_pairs, r.search.indivisible_pairs == 1 ? "" : "s",
                    limits.data_parallel_only() ? "world_size" : "the data-parallel size"));
  if (r.search.schedule_refused > 0)
    r.notes.push_back(fmt::format("{} config(s) not priced: their pipeline schedule cannot run their microbatch count "
                                  "(e.g. {})",
                                  r.search.schedule_refused, r.search.schedule_refusal));
  if (r.search.memory_pruned > 0)
    r.notes.push_back(fmt::format("{} layout config(s) not priced: a smaller micro_batch of the same plan was already "
                                  "over the memory limit (activations grow with micro_batch)",
                                  r.search.memory_pruned));
  if (r.search.layouts_refused > 0)
    r.notes.push_back(fmt::format("{} searched layout(s) the model refuses, e.g. {}", r.search.layouts_refused,
                                  r.search.layout_refusal));
  if (limits.layouts.size() == 1 && !limits.data_parallel_only())
    r.notes.push_back(fmt::format("layout {} on every config: accum_steps is the pipeline's microbatch count m, "
                                  "global batch = micro_batch x m x dp",
                                  to_string(limits.layouts.front())));
  else if (limits.layouts.size() > 1)
    r.notes.push_back(fmt::format("{} layouts searched (tp, pp, schedule, virtual stages; cp not searched): "
                                  "accum_steps is a pipeline's microbatch count m, global batch = micro_batch x m x dp",
                                  limits.layouts.size()));
  if (r.best().prediction.extrapolated)
    r.notes.push_back("the best pick is extrapolated beyond the measured micro_batch or world_size range");
  if (req.objective == Objective::time_to_target && req.exact())
    r.notes.push_back(
        "one global batch: time-to-target ranks exactly as throughput does (same steps-to-target "
        "factor for every config)");
  for (const auto& note : r.info.notes) r.notes.push_back("model: " + note);
  return r;
}

}  // namespace gaccum::tuner
