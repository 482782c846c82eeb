// What/why: diagnosis of an empty search (see infeasibility.hpp). The search space per world
// size p is {p*b*k : b <= f_p, k <= K}, where f_p is the largest micro_batch within the memory
// limit (and the measured range); every suggestion below is a point of such a set.
#include "tuner/infeasibility.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tuner/search.hpp"

namespace gaccum::tuner {
namespace {

Count ceil_div(Count a, Count b) {
  return a / b + (a % b > 0 ? 1 : 0);  // a >= 0, b >= 1; no a + b - 1 overflow
}

}  // namespace

// The helpers below work on n = b k = (global batch) / p: p b k lies in [lo, hi] exactly when
// b k lies in [ceil(lo/p), floor(hi/p)]. Each walks blocks of k (or b) with a constant quotient,
// so its trip count is at most min(f, 2 sqrt(n)) (min_accum_needed) or min(f, K, 2 sqrt(n)) (the
// others), and never more than kMaxBlocks (infeasibility.hpp); they used to step through every
// k or b, which took minutes for a global batch of 10^12.

namespace detail {

Count min_accum_needed(Count p, Count f, Count lo, Count hi) {
  if (f < 1 || p < 1 || hi < p) return 0;
  const Count n_lo = std::max<Count>(1, lo < 1 ? 1 : ceil_div(lo, p)), n_hi = hi / p;
  if (n_lo > n_hi) return 0;
  // k works when b = ceil(n_lo/k) is <= f (k >= ceil(n_lo/f)) and b k <= n_hi. Within a block of
  // k with the same c = ceil(n_lo/k), c k grows with k, so only the block's first k can work.
  Count k = ceil_div(n_lo, f);
  for (Count blocks = 0; k <= n_hi && blocks < kMaxBlocks; ++blocks) {
    const Count c = ceil_div(n_lo, k);
    if (c <= n_hi / k) return k;   // c k <= n_hi
    if (c == 1) return 0;          // k >= n_lo already and k > n_hi
    k = (n_lo - 1) / (c - 1) + 1;  // first k with ceil(n_lo/k) < c
  }
  return 0;
}

Count reachable_below(Count p, Count f, Count K, Count target) {
  if (p < 1 || f < 1 || K < 1 || target < p) return 0;
  const Count t = target / p;  // largest b k <= t with b <= f, k <= K
  if (f <= t / K) return p * f * K;
  // b <= t/K: k = K, best b = min(f, t/K). Larger b: k = floor(t/b) < K, and within a block of b
  // with the same q = floor(t/b) the largest b gives the largest q b.
  const Count b_k = std::min(f, t / K);
  Count best = b_k * K;
  Count b = std::min(f, t);
  for (Count blocks = 0; b > b_k && best < t && blocks < kMaxBlocks; ++blocks) {
    const Count q = t / b;
    best = std::max(best, q * b);
    b = t / (q + 1);  // largest b with floor(t/b) > q
  }
  return p * best;
}

Count min_product_at_least(Count t, Count f, Count K, Count good_enough) {
  // Smallest b k >= t with 1 <= b <= f, 1 <= k <= K (0 if none); stops at the first <= good_enough.
  t = std::max<Count>(t, 1);
  if (f < 1 || K < 1 || f < ceil_div(t, K)) return 0;
  if (f >= t) return t;  // b = t, k = 1
  // b from ceil(t/K) up: k = ceil(t/b) >= 2; within a block of the same k the first b is best.
  Count best = 0;
  Count b = ceil_div(t, K);
  for (Count blocks = 0; b <= f && blocks < kMaxBlocks; ++blocks) {
    const Count k = ceil_div(t, b);
    const Count v = k * b;  // < t + b <= 2 t, no overflow
    if (best == 0 || v < best) best = v;
    if (best == t || best <= good_enough) break;
    b = (t - 1) / (k - 1) + 1;  // first b with ceil(t/b) < k
  }
  return best;
}

Count reachable_above(Count p, Count f, Count K, Count target) {
  if (p < 1) return 0;
  const Count n = min_product_at_least(ceil_div(std::max<Count>(target, 1), p), f, K, 0);
  if (n == 0 || n > std::numeric_limits<Count>::max() / p) return 0;
  return p * n;
}

}  // namespace detail

namespace {

using detail::min_accum_needed;
using detail::reachable_above;
using detail::reachable_below;

// Smallest cap with apply_margin(cap, margin) >= need (0 when no cap in 64 bits does it):
// apply_margin is floor(cap keep / 10^6), so cap = ceil(need 10^6 / keep), split as
// need = q keep + r to stay in 64 bits.
Bytes smallest_cap_keeping(Bytes need, double margin) {
  constexpr Bytes kScale = 1000000;
  const Bytes keep = kScale - static_cast<Bytes>(std::round(std::clamp(margin, 0.0, 1.0) * double(kScale)));
  if (keep == 0) return 0;
  const Bytes q = need / keep, r = need % keep;
  if (q > (std::numeric_limits<Bytes>::max() - kScale) / kScale) return 0;
  return q * kScale + (r * kScale + keep - 1) / keep;
}

// Largest margin in 0.1% steps with apply_margin(cap, margin) >= need (need <= cap), in percent.
// apply_margin grows with the kept parts per million, so a binary search over keep in [0, 10^6]
// (20 steps) finds the least keep that holds `need`.
double largest_margin_percent(Bytes cap, Bytes need) {
  constexpr Bytes kScale = 1000000;
  auto holds = [&](Bytes keep) { return apply_margin(cap, double(kScale - keep) / double(kScale)) >= need; };
  Bytes lo = 0, hi = kScale;  // holds(hi) as need <= cap
  while (lo < hi) {
    const Bytes mid = lo + (hi - lo) / 2;
    if (holds(mid))
      hi = mid;
    else
      lo = mid + 1;
  }
  return double((kScale - lo) / 1000) / 10.0;
}

// Rounds bytes up to a flag value that parse_bytes reads back as at least `b`.
std::string cap_flag(Bytes b) {
  auto up = [b](Bytes unit) { return b / unit + (b % unit > 0 ? 1 : 0); };  // no b + unit - 1 overflow
  if (b >= 10 * GiB) return fmt::format("{}GiB", up(GiB));
  if (b >= 10 * MiB) return fmt::format("{}MiB", up(MiB));
  return fmt::format("{}KiB", up(KiB));
}

std::string target_text(const TuneRequest& r) {
  return r.exact() ? fmt::format("global_batch {}", r.global_batch_min)
                   : fmt::format("global_batch {}-{}", r.global_batch_min, r.global_batch_max);
}

}  // namespace

bool batch_reachable(Count p, Count f, Count K, Count lo, Count hi) {
  if (p < 1 || hi < p) return false;
  const Count n_lo = lo < 1 ? 1 : ceil_div(lo, p), n_hi = hi / p;
  if (n_lo > n_hi) return false;
  const Count n = detail::min_product_at_least(n_lo, f, K, n_hi);
  return n > 0 && n <= n_hi;
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
    const Bytes cap_needed = smallest_cap_keeping(need, r.margin);
    // A cap above the device's memory is no fix (the device still runs out): offered only when
    // the device memory is unknown or holds it.
    if (cap_needed > 0 && (l.device_memory == 0 || cap_needed <= l.device_memory))
      out.changes.push_back(fmt::format("raise --memory-cap to {}", cap_flag(cap_needed)));
    if (need <= l.cap && r.margin > 0)
      out.changes.push_back(fmt::format("lower --margin to {:.1f}%", largest_margin_percent(l.cap, need)));
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
