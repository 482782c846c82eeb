// What/why: the exhaustive search of search.hpp. Enumeration order is stable (global_batch,
// world_size, micro_batch ascending, then strategy) so CSV output is reproducible; ties in the
// objective (to 12 significant digits) prefer fewer ranks, then fewer accumulation steps, then
// enumeration order.
#include "tuner/search.hpp"


#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "model/parallel_plan.hpp"
#include "model/pipeline.hpp"
#include "tuner/explanation.hpp"

namespace gaccum::tuner {

double objective_value(Objective o, const model::Prediction& p, std::optional<double> noise_scale) {
  const double B = double(p.config.global_batch());
  switch (o) {
    case Objective::throughput:
      return p.throughput;
    case Objective::cost:
      return p.throughput > 0 ? double(p.config.world_size) / p.throughput : std::numeric_limits<double>::infinity();
    case Objective::time_to_target:
      // Steps to a target loss S(B) = S_min (1 + B_noise/B); wall time S(B) x step_time(B).
      // Reported per S_min: (1 + B_noise/B) x step_time, seconds.
      return noise_scale ? (1.0 + *noise_scale / B) * p.time.step_time : 0.0;
  }
  return 0;
}

double ranking_key(double score) {
  if (score == 0 || !std::isfinite(score)) return score;
  const double unit = std::pow(10.0, std::floor(std::log10(std::fabs(score))) - 11);  // the 12th digit
  return std::round(score / unit) * unit;
}

double objective_score(Objective o, const model::Prediction& p, std::optional<double> noise_scale) {
  double v = objective_value(o, p, noise_scale);
  return o == Objective::throughput ? -v : v;
}

std::vector<Count> divisors(Count n) {
  std::vector<Count> small, large;
  for (Count d = 1; d * d <= n; ++d) {
    if (n % d == 0) {
      small.push_back(d);
      if (d != n / d) large.push_back(n / d);
    }
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

std::size_t divisor_count(Count n) {
  std::size_t c = 0;
  for (Count d = 1; d * d <= n; ++d)
    if (n % d == 0) c += (d * d == n) ? 1 : 2;
  return c;
}

Count max_micro_batch_within(const model::CostModel& model, const Limits& limits, const model::Config& shape,
                             Count upper) {
  model::Config c = shape;
  c.accum_steps = model::memory_accum_steps(shape.layout, shape.accum_steps);
  auto fits = [&](Count b) {
    c.micro_batch = b;
    try {
      return model.predict(c).memory.peak <= limits.limit;
    } catch (const InputError&) {
      return false;  // a layout the model refuses fits nothing
    }
  };
  if (upper < 1 || !fits(1)) return 0;
  Count lo = 1, hi = upper;  // invariant: fits(lo)
  if (fits(hi)) return hi;
  while (hi - lo > 1) {  // invariant: fits(lo), !fits(hi)
    Count mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

SearchResult search(const model::CostModel& model, const TuneRequest& request) {
  return search(model, request, resolve_limits(model.info(), request));
}

SearchResult search(const model::CostModel& model, const TuneRequest& request, const Limits& limits) {
  SearchResult res;
  res.limits = limits;
  res.objective = request.objective;
  if (request.objective == Objective::time_to_target && !limits.noise_scale)
    throw InputError(
        "--objective time-to-target: needs the gradient noise scale B_noise, which this model does not have; "
        "pass --noise-scale N (samples) or use a profile with gradient statistics");

  // Plan shapes per world size and layout (rejected plans left out): world_size 1 shards and
  // synchronises nothing, so under auto it evaluates one shape per precision x checkpointing
  // (DDP, first strategy).
  struct LayoutShapes {
    ParallelLayout layout;
    Count dp = 1;                        // world_size / (tp pp cp)
    std::vector<model::Config> shapes;
  };
  auto shapes_at = [&](Count p) {
    std::vector<LayoutShapes> out;
    if (p == 1) {
      LayoutShapes g;
      for (Precision pr : limits.precisions)
        for (Checkpointing ck : limits.checkpointings)
          for (Strategy s : (request.strategy ? limits.evaluated : std::vector<Strategy>{limits.evaluated.front()})) {
            model::Config c{1, 1, 1, s};
            c.precision = pr;
            c.checkpointing = ck;
            c.offload_optimizer = limits.offload_optimizer;
            c.offload_params = limits.offload_params;
            if (limits.framework && !framework_runs(*limits.framework, model::framework_plan_any_k(c))) continue;
            g.shapes.push_back(c);
          }
      if (std::any_of(limits.layouts.begin(), limits.layouts.end(), [](const auto& l) { return l.data_parallel_only(); }))
        out.push_back(g);
      return out;
    }
    for (const ParallelLayout& lay : limits.layouts) {
      if (p % lay.model_parallel() != 0) continue;
      LayoutShapes g{lay, p / lay.model_parallel(), plan_shapes(limits, p, false, lay)};
      if (!g.shapes.empty()) out.push_back(std::move(g));
    }
    return out;
  };
  std::vector<std::vector<LayoutShapes>> shapes_by_p;
  for (Count p : limits.world_sizes) shapes_by_p.push_back(shapes_at(p));
  // The layouts' own rules (heads over tp, layers over stages, tp within a node) do not depend
  // on b and m: one probe each at a legal microbatch count. A pinned layout the model refuses is
  // bad input; a searched one is dropped with its reason.
  const bool searched = limits.layouts.size() > 1;
  std::vector<std::pair<ParallelLayout, std::string>> refused;
  for (auto& groups : shapes_by_p)
    for (auto it = groups.begin(); it != groups.end();) {
      if (it->layout.data_parallel_only()) {
        ++it;
        continue;
      }
      // Each plan shape once: which framework runs a layout can depend on the shape (torchtitan
      // has no zero1 with a pipeline, and Megatron-LM needs layers that divide the stages), so a
      // shape no framework prices on this layout is dropped, and the layout with its last one.
      std::string why;
      for (auto shape = it->shapes.begin(); shape != it->shapes.end();) {
        model::Config probe = *shape;
        probe.accum_steps = it->layout.pp;
        try {
          (void)model.predict(probe);
          ++shape;
        } catch (const InputError& e) {
          if (why.empty()) why = e.what();
          shape = it->shapes.erase(shape);
        }
      }
      if (!it->shapes.empty()) {
        ++it;
        continue;
      }
      if (!searched) throw InputError(fmt::format("--tp/--pp/--cp ({}): {}", to_string(it->layout), why));
      if (std::none_of(refused.begin(), refused.end(), [&](const auto& r) { return r.first == it->layout; }))
        refused.emplace_back(it->layout, why);
      it = groups.erase(it);
    }
  res.layouts_refused = static_cast<Count>(refused.size());
  if (!refused.empty()) res.layout_refusal = fmt::format("{}: {}", to_string(refused.front().first), refused.front().second);

  // Count first so the candidates (~250 B each) are allocated once, not regrown and copied.
  std::size_t total = 0;
  for (Count B = request.global_batch_min; B <= request.global_batch_max; ++B)
    for (const auto& groups : shapes_by_p)
      for (const auto& g : groups)
        if (B % g.dp == 0) total += divisor_count(B / g.dp) * g.shapes.size();
  // Every candidate is kept (the reports list them all): a request beyond the caller's limit is
  // refused with the fix instead of running the host out of memory.
  const std::size_t kMaxCandidates = request.max_candidates;
  if (kMaxCandidates > 0 && total > kMaxCandidates) {
    std::size_t shapes = 0;
    for (const auto& groups : shapes_by_p) {
      std::size_t n = 0;
      for (const auto& g : groups) n += g.shapes.size();
      shapes = std::max(shapes, n);
    }
    throw InputError(fmt::format(
        "{}: {} configs to price (global batches {}-{} x {} world sizes x their micro_batch divisors x up to {} plan "
        "shapes), above the {} a search keeps: narrow the global batch range, give --world-sizes, or pin --sharding, "
        "--precision, --checkpointing, --strategy{}",
        request.exact() ? "--global-batch" : "--global-batch-range", total, request.global_batch_min,
        request.global_batch_max, limits.world_sizes.size(), shapes, kMaxCandidates,
        searched ? " or the layout (--tp, --pp)" : ""));
  }
  res.candidates.reserve(total);
  std::vector<Count> divs;
  for (Count B = request.global_batch_min; B <= request.global_batch_max; ++B) {
    for (std::size_t pi = 0; pi < limits.world_sizes.size(); ++pi) {
      bool divided = false;
      for (const LayoutShapes& g : shapes_by_p[pi]) {
        const ParallelLayout& layout = g.layout;
        if (B % g.dp != 0) continue;
        divided = true;
        divs = divisors(B / g.dp);
        // A shape whose peak is over the limit at micro_batch b is over it at every larger b when
        // the microbatches in flight do not depend on m (all but gpipe): those are not priced.
        std::vector<char> over(g.shapes.size(), 0);
        const bool monotone = layout.pp < 2 || layout.schedule != Schedule::gpipe;
        for (Count b : divs) {
          const Count k = B / g.dp / b;
          if ((request.micro_batch && b != *request.micro_batch) || (request.accum_steps && k != *request.accum_steps))
            continue;  // pinned (TuneRequest::micro_batch / accum_steps)
          if (layout.pp > 1) {
            if (auto why = model::schedule_rejection(layout.schedule, layout.pp, layout.virtual_stages, k)) {
              res.schedule_refused += static_cast<Count>(g.shapes.size());
              if (res.schedule_refusal.empty()) res.schedule_refusal = *why;
              continue;  // not a run the schedule can make: counted, not priced
            }
          }
          for (std::size_t si = 0; si < g.shapes.size(); ++si) {
            if (over[si] && !layout.data_parallel_only()) {
              ++res.memory_pruned;
              continue;
            }
            model::Config cfg = g.shapes[si];
            cfg.micro_batch = b;
            cfg.accum_steps = k;
            Candidate c;
            c.prediction = model.predict(cfg);
            if (k > limits.max_accum_steps) c.violations |= kAccumSteps;
            if (limits.micro_batch_limit > 0 && b > limits.micro_batch_limit) c.violations |= kMicroBatchRange;
            if (c.prediction.memory.peak > limits.limit) {
              c.violations |= kMemory;
              if (monotone) over[si] = 1;
            }
            if (b < limits.min_micro_batch) c.violations |= kModelRaises;
            c.rankable = strategy_rankable(limits, cfg.strategy, cfg.sharding.sharding);
            c.score = objective_score(request.objective, c.prediction, limits.noise_scale);
            res.candidates.push_back(std::move(c));
          }
        }
      }
      if (!divided) ++res.indivisible_pairs;
    }
  }

  // At accum_steps 1 on more than one rank, every-step and overlap are the same run (no no_sync()
  // window: the only backward reduces) and are priced the same: ranked once, as overlap.
  std::set<std::string> overlap_once;
  const auto run_key = [](const model::Config& c) {
    return fmt::format("{} {}{}", short_config(c), c.offload_optimizer ? "oo" : "", c.offload_params ? "op" : "");
  };
  for (const auto& c : res.candidates)
    if (c.rankable && c.config().accum_steps == 1 && c.config().world_size > 1 &&
        c.config().strategy == Strategy::overlap)
      overlap_once.insert(run_key(c.config()));
  for (auto& c : res.candidates) {
    if (!c.rankable || c.config().accum_steps != 1 || c.config().world_size < 2 ||
        c.config().strategy != Strategy::every_step)
      continue;
    model::Config o = c.config();
    o.strategy = Strategy::overlap;
    if (overlap_once.count(run_key(o))) c.rankable = false, c.same_run_as_overlap = true;
  }

  res.ranking.reserve(res.candidates.size());
  for (std::uint32_t i = 0; i < res.candidates.size(); ++i) {
    const auto& c = res.candidates[i];
    if (c.feasible() && c.rankable && std::isfinite(c.score)) res.ranking.push_back(i);
  }
  const auto& cs = res.candidates;
  // Scores equal to 12 significant digits tie: rounding noise from summing the same seconds in
  // another order must not choose between plans the model prices the same (fused and overlap when
  // overlapping hides nothing); the tie goes to fewer ranks, fewer accumulation steps, then
  // enumeration order (overlap before fused).
  std::vector<double> key(cs.size());  // once per candidate, not per comparison
  for (std::uint32_t i : res.ranking) key[i] = ranking_key(cs[i].score);
  std::sort(res.ranking.begin(), res.ranking.end(), [&](std::uint32_t a, std::uint32_t b) {
    const auto &x = cs[a], &y = cs[b];
    if (key[a] != key[b]) return key[a] < key[b];
    if (x.config().world_size != y.config().world_size) return x.config().world_size < y.config().world_size;
    if (x.config().accum_steps != y.config().accum_steps) return x.config().accum_steps < y.config().accum_steps;
    return a < b;
  });
  for (std::size_t r = 0; r < res.ranking.size(); ++r) res.candidates[res.ranking[r]].rank = Count(r + 1);
  return res;
}

std::string reason_text(const Candidate& c, const Limits& limits) {
  std::vector<std::string> parts;
  const auto& cfg = c.config();
  if (c.violations & kMemory)
    parts.push_back(
        fmt::format("peak memory {} > limit {}", format_bytes(c.prediction.memory.peak), format_bytes(limits.limit)));
  if (c.violations & kAccumSteps)
    parts.push_back(fmt::format("accum_steps {} > --max-accum-steps {}", cfg.accum_steps, limits.max_accum_steps));
  if (c.violations & kMicroBatchRange)
    parts.push_back(
        fmt::format("micro_batch {} above the measured {} (--extrapolate)", cfg.micro_batch, limits.micro_batch_limit));
  if (c.violations & kModelRaises)
    parts.push_back(fmt::format("micro_batch {} < {}: {}", cfg.micro_batch, limits.min_micro_batch,
                                limits.min_micro_batch_reason.empty() ? "the model raised there when profiled"
                                                                      : limits.min_micro_batch_reason));
  if (parts.empty() && c.same_run_as_overlap)
    parts.push_back("accum_steps 1: the same run as overlap (one micro-step per optimizer step), ranked as overlap");
  else if (parts.empty() && !c.rankable)
    parts.push_back(fmt::format("{}{}: priced, not ranked (--strategy {} ranks it)", to_string(cfg.strategy),
                                cfg.sharding.sharding == Sharding::none ? "" : " under " + to_string(cfg.sharding),
                                to_string(cfg.strategy)));
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace gaccum::tuner
