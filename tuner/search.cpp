// What/why: the exhaustive search of search.hpp. Enumeration order is stable (global_batch,
// world_size, micro_batch ascending, then strategy) so CSV output is reproducible; ties in the
// objective prefer fewer ranks, then fewer accumulation steps, then enumeration order.
#include "tuner/search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"

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
  c.accum_steps = 1;
  auto fits = [&](Count b) {
    c.micro_batch = b;
    return model.predict(c).memory.peak <= limits.limit;
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

  // Plan shapes per world size (rejected plans left out): world_size 1 shards and synchronises
  // nothing, so under auto it evaluates one shape per precision x checkpointing (DDP, first strategy).
  auto shapes_at = [&](Count p) {
    std::vector<model::Config> shapes;
    if (p == 1) {
      for (Precision pr : limits.precisions)
        for (Checkpointing ck : limits.checkpointings)
          for (Strategy s : (request.strategy ? limits.evaluated : std::vector<Strategy>{limits.evaluated.front()})) {
            model::Config c{1, 1, 1, s};
            c.precision = pr;
            c.checkpointing = ck;
            c.offload_optimizer = limits.offload_optimizer;
            c.offload_params = limits.offload_params;
            if (limits.framework && !framework_runs(*limits.framework, model::framework_plan(c))) continue;
            shapes.push_back(c);
          }
      return shapes;
    }
    return plan_shapes(limits, p, false);
  };
  // Count first so the candidates (~250 B each) are allocated once, not regrown and copied.
  std::vector<std::vector<model::Config>> shapes_by_p;
  for (Count p : limits.world_sizes) shapes_by_p.push_back(shapes_at(p));
  std::size_t total = 0;
  for (Count B = request.global_batch_min; B <= request.global_batch_max; ++B)
    for (std::size_t i = 0; i < limits.world_sizes.size(); ++i)
      if (B % limits.world_sizes[i] == 0) total += divisor_count(B / limits.world_sizes[i]) * shapes_by_p[i].size();
  // Every candidate is kept (the reports list them all): a request beyond the caller's limit is
  // refused with the fix instead of running the host out of memory.
  const std::size_t kMaxCandidates = request.max_candidates;
  if (kMaxCandidates > 0 && total > kMaxCandidates) {
    std::size_t shapes = 0;
    for (const auto& v : shapes_by_p) shapes = std::max(shapes, v.size());
    throw InputError(fmt::format(
        "{}: {} configs to price (global batches {}-{} x {} world sizes x their micro_batch divisors x up to {} plan "
        "shapes), above the {} a search keeps: narrow the global batch range, give --world-sizes, or pin --sharding, "
        "--precision, --checkpointing or --strategy",
        request.exact() ? "--global-batch" : "--global-batch-range", total, request.global_batch_min,
        request.global_batch_max, limits.world_sizes.size(), shapes, kMaxCandidates));
  }
  res.candidates.reserve(total);
  std::vector<Count> divs;
  for (Count B = request.global_batch_min; B <= request.global_batch_max; ++B) {
    for (std::size_t pi = 0; pi < limits.world_sizes.size(); ++pi) {
      const Count p = limits.world_sizes[pi];
      if (B % p != 0) {
        ++res.indivisible_pairs;
        continue;
      }
      divs = divisors(B / p);
      for (Count b : divs) {
        const Count k = B / p / b;
        if ((request.micro_batch && b != *request.micro_batch) || (request.accum_steps && k != *request.accum_steps))
          continue;  // pinned (TuneRequest::micro_batch / accum_steps)
        for (const model::Config& shape : shapes_by_p[pi]) {
          model::Config cfg = shape;
          cfg.micro_batch = b;
          cfg.accum_steps = k;
          Candidate c;
          c.prediction = model.predict(cfg);
          if (k > limits.max_accum_steps) c.violations |= kAccumSteps;
          if (limits.micro_batch_limit > 0 && b > limits.micro_batch_limit) c.violations |= kMicroBatchRange;
          if (c.prediction.memory.peak > limits.limit) c.violations |= kMemory;
          if (b < limits.min_micro_batch) c.violations |= kModelRaises;
          c.rankable = strategy_rankable(limits, cfg.strategy, cfg.sharding.sharding);
          c.score = objective_score(request.objective, c.prediction, limits.noise_scale);
          res.candidates.push_back(c);
        }
      }
    }
  }

  res.ranking.reserve(res.candidates.size());
  for (std::uint32_t i = 0; i < res.candidates.size(); ++i) {
    const auto& c = res.candidates[i];
    if (c.feasible() && c.rankable && std::isfinite(c.score)) res.ranking.push_back(i);
  }
  const auto& cs = res.candidates;
  std::sort(res.ranking.begin(), res.ranking.end(), [&](std::uint32_t a, std::uint32_t b) {
    const auto &x = cs[a], &y = cs[b];
    if (x.score != y.score) return x.score < y.score;
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
  if (parts.empty() && !c.rankable)
    parts.push_back(fmt::format("{}{}: priced, not ranked (--strategy {} ranks it)", to_string(cfg.strategy),
                                cfg.sharding.sharding == Sharding::none ? "" : " under " + to_string(cfg.sharding),
                                to_string(cfg.strategy)));
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace gaccum::tuner
