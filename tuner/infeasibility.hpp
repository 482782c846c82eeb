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
// lo <= world_size*b*k <= hi?  O(min(max_micro_batch, hi/world_size)).
bool batch_reachable(Count world_size, Count max_micro_batch, Count max_accum, Count lo, Count hi);

}  // namespace gaccum::tuner
