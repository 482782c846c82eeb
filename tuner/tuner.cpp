// What/why: the orchestration of tuner.hpp: validate, resolve limits, search, explain, advise.
#include "tuner/tuner.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "tuner/infeasibility.hpp"

namespace gaccum::tuner {
namespace {

std::vector<MemoryCurvePoint> memory_curve(const model::CostModel& model, const SearchResult& res) {
  const auto& l = res.limits;
  Count max_b = 1;
  for (const auto& c : res.candidates) max_b = std::max(max_b, c.config().micro_batch);
  const Strategy s = l.ranked.front();
  std::vector<MemoryCurvePoint> out;
  const Count measured = model.info().measured_max_micro_batch;
  for (Count p : l.world_sizes) {
    // Up to a little past where the limit is crossed, so the crossing is readable on the chart.
    const Count fit = max_micro_batch_within(model, l, p, s, max_b);
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
      pt.peak = model.predict(model::Config{b, 1, p, s}).memory.peak;
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
                      s.config.world_size == c.world_size);
    if (!seen) out.push_back(PricedSetting{c, price_every_step(model, c)});
  }
  return out;
}

}  // namespace

TuneResult tune(const model::CostModel& model, TuneRequest request) {
  validate(request);
  TuneResult r;
  r.info = model.info();
  const Limits limits = resolve_limits(r.info, request);
  r.search = search(model, request, limits);
  r.request = std::move(request);
  const auto& req = r.request;
  if (r.search.ranking.empty()) throw InfeasibleError(diagnose_infeasible(model, req, limits).message());

  r.pareto = pareto_front(r.search);
  const std::size_t n = std::min<std::size_t>(std::size_t(req.top), r.search.ranking.size());
  for (std::size_t i = 0; i < n; ++i) r.picks.push_back(explain(model, r.search, r.pareto, i, req.margin));
  const Count B = r.best().config().global_batch();
  r.lr = recommend_lr(req.lr_reference, req.optimizer, B, req.dataset_size);
  r.critical = critical_batch_advice(limits.noise_scale, B);
  r.memory_curve = memory_curve(model, r.search);
  r.strategy_prices = strategy_prices(model, r.search, 6);

  r.notes = limits.notes;
  if (r.info.device_kind == "cpu")
    r.notes.push_back(fmt::format("CPU profile: each rank stands for one GPU and ran with {} thread{} per rank",
                                  r.info.threads_per_rank, r.info.threads_per_rank == 1 ? "" : "s"));
  if (!req.strategy)
    r.notes.push_back(
        "--strategy auto: overlap and fused are ranked; every-step (allreduce on every micro-step) is "
        "evaluated and priced but not ranked; world_size 1 synchronises nothing, so one strategy is "
        "evaluated there");
  if (r.search.indivisible_pairs > 0)
    r.notes.push_back(
        fmt::format("{} (global_batch, world_size) pair{} skipped: world_size does not divide the global "
                    "batch",
                    r.search.indivisible_pairs, r.search.indivisible_pairs == 1 ? "" : "s"));
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
