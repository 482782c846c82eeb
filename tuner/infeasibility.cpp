// What/why: diagnosis of an empty search (see infeasibility.hpp). The search space per world
// size p is {p*b*k : b <= f_p, k <= K}, where f_p is the largest micro_batch within the memory
// limit (and the measured range); every suggestion below is a point of such a set.
#include "tuner/infeasibility.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tuner/search.hpp"

namespace gaccum::tuner {
namespace {

Count ceil_div(Count a, Count b) {
  return (a + b - 1) / b;
}

// Smallest k >= 1 with some b <= f: lo <= p b k <= hi; 0 when none up to hi/p.
Count min_accum_needed(Count p, Count f, Count lo, Count hi) {
  if (f < 1) return 0;
  for (Count k = 1; p * k <= hi; ++k) {
    Count b_lo = std::max<Count>(1, ceil_div(lo, p * k));
    Count b_hi = std::min(f, hi / (p * k));
    if (b_lo <= b_hi) return k;
  }
  return 0;
}

// Largest p*b*k <= target with b <= f, k <= K (0 if none).
Count reachable_below(Count p, Count f, Count K, Count target) {
  Count best = 0;
  for (Count b = 1; b <= f && p * b <= target; ++b) best = std::max(best, p * b * std::min(K, target / (p * b)));
  return best;
}

// Smallest p*b*k >= target with b <= f, k <= K (0 if none).
Count reachable_above(Count p, Count f, Count K, Count target) {
  Count best = 0;
  for (Count b = 1; b <= f; ++b) {
    Count k = ceil_div(target, p * b);
    if (k > K) continue;
    Count v = p * b * k;
    if (best == 0 || v < best) best = v;
    if (k == 1) break;  // larger b only overshoots further
  }
  return best;
}

// Rounds bytes up to a flag value that parse_bytes reads back as at least `b`.
std::string cap_flag(Bytes b) {
  if (b >= 10 * GiB) return fmt::format("{}GiB", (b + GiB - 1) / GiB);
  if (b >= 10 * MiB) return fmt::format("{}MiB", (b + MiB - 1) / MiB);
  return fmt::format("{}KiB", (b + KiB - 1) / KiB);
}

std::string target_text(const TuneRequest& r) {
  return r.exact() ? fmt::format("global_batch {}", r.global_batch_min)
                   : fmt::format("global_batch {}-{}", r.global_batch_min, r.global_batch_max);
}

}  // namespace

bool batch_reachable(Count p, Count f, Count K, Count lo, Count hi) {
  for (Count b = 1; b <= f && p * b <= hi; ++b) {
    Count k_lo = std::max<Count>(1, ceil_div(lo, p * b));
    Count k_hi = std::min(K, hi / (p * b));
    if (k_lo <= k_hi) return true;
  }
  return false;
}

std::string Infeasibility::message() const {
  std::string m = detail;
  if (!changes.empty()) m += fmt::format("; smallest change: {}", fmt::join(changes, ", or "));
  return m;
}

Infeasibility diagnose_infeasible(const model::CostModel& model, const TuneRequest& r, const Limits& l) {
  const Count lo = r.global_batch_min, hi = r.global_batch_max, K = l.max_accum_steps;
  const Count mb_limit = l.micro_batch_limit;
  const std::string head =
      fmt::format("no feasible config for {} (world_size {})", target_text(r), fmt::join(l.world_sizes, ", "));

  // Largest micro_batch within the memory limit at p (best over the rankable strategies).
  std::map<Count, Count> mem_fit_cache;
  auto mem_fit = [&](Count p) {
    auto it = mem_fit_cache.find(p);
    if (it != mem_fit_cache.end()) return it->second;
    Count best = 0;
    const Count upper = 2 * (hi / p) + 2;
    for (const auto& shape : plan_shapes(l, p, true)) best = std::max(best, max_micro_batch_within(model, l, shape, upper));
    mem_fit_cache[p] = best;
    return best;
  };
  auto fit = [&](Count p) { return mb_limit > 0 ? std::min(mem_fit(p), mb_limit) : mem_fit(p); };

  Infeasibility out;
  bool any_memory = false;
  for (Count p : l.world_sizes) any_memory = any_memory || mem_fit(p) > 0;

  if (!any_memory) {
    // Even micro_batch 1 is over the limit everywhere.
    Bytes need = 0;
    Count at_p = 0;
    for (Count p : l.world_sizes)
      for (const auto& shape : plan_shapes(l, p, true)) {
        Bytes v = model.predict(shape).memory.peak;
        if (need == 0 || v < need) need = v, at_p = p;
      }
    out.binding = "memory";
    out.detail = fmt::format(
        "{}: memory cap binds: even micro_batch 1 needs {} per rank (world_size {}) > limit {} (cap {} minus {:g}% "
        "margin)",
        head, format_bytes(need), at_p, format_bytes(l.limit), format_bytes(l.cap), r.margin * 100);
    const double keep = 1.0 - r.margin;
    Bytes cap_needed = static_cast<Bytes>(std::ceil(static_cast<long double>(need) / keep));
    while (apply_margin(cap_needed, r.margin) < need) ++cap_needed;
    out.changes.push_back(fmt::format("raise --memory-cap to {}", cap_flag(cap_needed)));
    if (need <= l.cap && r.margin > 0) {
      double m = std::floor((1.0 - double(need) / double(l.cap)) * 1000.0) / 10.0;  // percent, 0.1 resolution
      while (m > 0 && apply_margin(l.cap, m / 100.0) < need) m -= 0.1;
      if (m >= 0) out.changes.push_back(fmt::format("lower --margin to {:.1f}%", std::max(0.0, m)));
    }
    if (l.device_memory > 0 && need > l.device_memory)
      out.changes.push_back(fmt::format("a device with more than {} (this one has {})", format_bytes(need),
                                        format_bytes(l.device_memory)));
    return out;
  }

  // Which world sizes can hold the target at all (a multiple of p in [lo, hi])?
  std::vector<Count> dividing;
  for (Count p : l.world_sizes)
    if (fit(p) > 0 && hi / p >= ceil_div(lo, p)) dividing.push_back(p);

  if (dividing.empty()) {
    out.binding = "divisibility";
    out.detail = fmt::format("{}: divisibility binds: no allowed world_size that fits in memory divides {}", head,
                             r.exact() ? fmt::format("{}", lo) : fmt::format("any batch in {}-{}", lo, hi));
  } else {
    // The world size needing the fewest accumulation steps.
    Count best_p = 0, best_k = 0;
    for (Count p : dividing) {
      Count k = min_accum_needed(p, fit(p), lo, hi);
      if (k > 0 && (best_k == 0 || k < best_k)) best_k = k, best_p = p;
    }
    out.binding = "accum-steps";
    if (best_k == 0) {
      out.detail = fmt::format("{}: accum_steps binds: no micro_batch within the limit reaches the target", head);
    } else {
      const Count f = fit(best_p);
      std::string why_f;
      if (mb_limit > 0 && mb_limit < mem_fit(best_p)) {
        why_f = fmt::format("the largest measured micro_batch is {} (--extrapolate goes beyond)", mb_limit);
      } else {
        Bytes over = 0;
        for (auto shape : plan_shapes(l, best_p, true)) {
          shape.micro_batch = f + 1;
          const Bytes v = model.predict(shape).memory.peak;
          if (over == 0 || v < over) over = v;
        }
        why_f =
            fmt::format("micro_batch {} would need {} > limit {}", f + 1, format_bytes(over), format_bytes(l.limit));
      }
      std::string div;
      if (r.exact()) {
        const Count q = lo / best_p;
        const Count b_used = q / best_k;
        if (b_used < f)
          div = fmt::format(", and {} = {}/{} has no divisor between {} and {}", q, lo, best_p, b_used + 1, f);
      }
      out.detail = fmt::format(
          "{}: accum_steps binds: at world_size {} micro_batch is at most {} ({}){}, so accum_steps must be at "
          "least {} > --max-accum-steps {}",
          head, best_p, f, why_f, div, best_k, K);
      out.changes.push_back(fmt::format("raise --max-accum-steps to {}", best_k));
    }
    if (mb_limit > 0) {
      bool helps = false;
      for (Count p : l.world_sizes) helps = helps || batch_reachable(p, mem_fit(p), K, lo, hi);
      if (helps) out.changes.push_back("--extrapolate (micro_batch above the measured range)");
    }
  }

  // Nearest global batches that work with the current limits.
  Count below = 0, above = 0;
  for (Count p : l.world_sizes) {
    const Count f = fit(p);
    if (f < 1) continue;
    if (lo > 1) below = std::max(below, reachable_below(p, f, K, lo - 1));
    Count a = reachable_above(p, f, K, hi + 1);
    if (a > 0 && (above == 0 || a < above)) above = a;
  }
  if (r.exact()) {
    if (below > 0) out.changes.push_back(fmt::format("lower --global-batch to {}", below));
    if (above > 0) out.changes.push_back(fmt::format("raise --global-batch to {}", above));
  } else {
    if (below > 0) out.changes.push_back(fmt::format("widen --global-batch-range to {}-{}", below, hi));
    if (above > 0) out.changes.push_back(fmt::format("widen --global-batch-range to {}-{}", lo, above));
  }

  // The nearest world size outside the allowed set that works.
  const Count p_max =
      model.info().max_world_size > 0 ? model.info().max_world_size : std::max<Count>(64, 4 * l.world_sizes.back());
  for (Count p = 1; p <= std::min(p_max, hi); ++p) {
    if (std::binary_search(l.world_sizes.begin(), l.world_sizes.end(), p)) continue;
    if (hi / p < ceil_div(lo, p)) continue;  // no multiple of p in range
    if (batch_reachable(p, fit(p), K, lo, hi)) {
      out.changes.push_back(fmt::format("allow world_size {} (--world-sizes or --max-world-size)", p));
      break;
    }
  }
  return out;
}

}  // namespace gaccum::tuner
