// What: test-only fault injection for the runner's integration tests, read from hidden
//       environment variables (not flags, not in --help):
//   GACCUM_TEST_FAULT   = rank:R:KIND[:STEP[:MICRO]]   KIND: exit (status 1), abort (SIGABRT),
//                         sigkill, hang (stops making progress), oom (an allocation failure in
//                         the forward pass), nojoin (never reaches the rendezvous), dropsend
//                         (a pipeline rank never sends that microbatch's hidden state). Default
//                         STEP 1, MICRO 0: when rank R starts that micro-step.
//   GACCUM_TEST_PERTURB = rank:R:seed | rank:R:schedule rank R uses seed + 1, or another pipeline
//                                                       schedule (agreement check)
//   GACCUM_TEST_BREAK   = skip-zero-grad | normalise-by-k | rank:R:param | shard-overwrite |
//                         shard-local | swap-forwards | skip-partial-sum
//                         deliberate training bugs, so the tests show each check can fail:
//                         no zero_grad between windows; loss divided by accum_steps and the
//                         micro-batch's own tokens (the common mistake); rank R's parameters
//                         (sharded: its shards) nudged after step 0; sharded runs: each
//                         reduce-scatter overwrites the gradient shard instead of adding to it,
//                         or no reduce-scatter at all (comm/sharded_sync.hpp, ShardFault); pipeline
//                         runs: stage 0 runs its first two forwards in swapped order; sequence-
//                         parallel runs: the norms' partial gradients are not summed over tp.
// Why: every fault and every check must be exercised by a real multi-process test.
#pragma once

#include <string>

#include "comm/sharded_sync.hpp"
#include "core/units.hpp"

namespace gaccum::runner {

struct Faults {
  std::string kind;        // empty: no fault on this rank
  Count step = 1, micro = 0;
  bool perturb_seed = false;
  bool skip_zero_grad = false;
  bool normalise_by_k = false;
  bool perturb_param = false;
  bool other_schedule = false;  // pipeline: this rank joins with another schedule
  bool swap_forwards = false;   // pipeline: stage 0 swaps its first two forwards
  bool skip_partial_sum = false;  // sequence parallelism: the norms' partial gradients not summed
  comm::ShardFault shard = comm::ShardFault::none;

  // The faults that apply to `rank`. InputError for a malformed variable.
  static Faults from_env(int rank);
  bool never_joins() const { return kind == "nojoin"; }
  // Pipeline: whether this rank skips the send of microbatch `micro`'s hidden state in `step`.
  bool drops_send(Count step, Count micro) const;
  // Misbehaves as asked when (step, micro) is the injection point; otherwise returns.
  void maybe_trigger(Count step, Count micro) const;
};

}  // namespace gaccum::runner
