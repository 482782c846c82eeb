// What: why a search found no feasible config, as one line naming the binding constraint and
//       the smallest changes (one per axis) that would make a config feasible:
//       "no feasible config for global_batch 509 (world_size 1, 2, 4, 8): accum_steps binds: ...;
//        smallest change: raise --max-accum-steps to 509, or lower --global-batch to 504, ...".
// Why: "no result" is the least helpful answer a tuner can give; each suggested change is
//      checked against the same model and limits, so following it really yields a config.
#pragma once

#include <string>
#include <vector>

#include "model/cost_model.hpp"
#include "tuner/tune_request.hpp"

namespace gaccum::tuner {

struct Infeasibility {
  std::string binding;               // "memory", "divisibility" or "accum-steps"
  std::string detail;                // the binding constraint with its numbers
  std::vector<std::string> changes;  // smallest changes, e.g. "raise --max-accum-steps to 128"
  std::string message() const;       // one line: detail + changes
};

Infeasibility diagnose_infeasible(const model::CostModel& model, const TuneRequest& request, const Limits& limits);

// Is there a micro_batch b <= max_micro_batch and accum_steps k <= max_accum with
// lo <= world_size*b*k <= hi?  O(min(max_micro_batch, max_accum, sqrt(hi/world_size))) steps.
bool batch_reachable(Count world_size, Count max_micro_batch, Count max_accum, Count lo, Count hi);

// The searches behind the suggested changes (p: world size, f: largest micro_batch, K: largest
// accum_steps), exposed for tests. None steps more than kMaxBlocks times: beyond that (only
// with f above 2^24 and a batch above 2^46) a search gives up and answers "none" (0).
namespace detail {
inline constexpr Count kMaxBlocks = Count(1) << 24;
// Smallest k >= 1 with some b <= f: lo <= p b k <= hi; 0 when none.
Count min_accum_needed(Count p, Count f, Count lo, Count hi);
// Largest p b k <= target with b <= f, k <= K (0 if none).
Count reachable_below(Count p, Count f, Count K, Count target);
// Smallest p b k >= target with b <= f, k <= K (0 if none, or beyond int64).
Count reachable_above(Count p, Count f, Count K, Count target);
// Smallest b k >= t with b <= f, k <= K (0 if none); stops early at any value <= good_enough.
Count min_product_at_least(Count t, Count f, Count K, Count good_enough);
}  // namespace detail

}  // namespace gaccum::tuner
