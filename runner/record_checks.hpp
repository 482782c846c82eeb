// What: rank 0's assembly of a validation run's record (runner/run_record.hpp) from every rank's
//       RankRecord and its own window checks, after the last window:
//   checks (each a function of the records; PASS, FAIL, or n/a with the reason, and its numbers;
//   a control that cannot discriminate on this input is n/a, never FAIL: a correct run never fails)
//     gradient_equivalence       step 0: the accumulated, synced gradient vs the reference
//                                (runner/gradients.hpp) within rtol/atol (n/a: the reference is
//                                exactly 0)
//     negative_control           the gradient as the plan holds it before the last micro-step
//                                (rank 0's local one; sharded every-step: the reduced shards)
//                                must differ (n/a: the last micro-step has no samples on any
//                                rank, or the reference is exactly 0)
//     zero_grad_at_window_start  every element exactly 0 at every window start, every rank
//     parameters_identical       final parameters and step-0 synced gradients bitwise equal
//     token_normalisation        (token workloads) the gradient is the window's real-token
//                                normalisation where dividing each micro-batch's mean by
//                                accum_steps would differ (n/a: the two coincide on this input,
//                                e.g. every sample has the same number of real tokens)
//     partial_window             the last partial window equals its reference (or was dropped)
//     collectives_match_strategy the collectives per step / micro-step the plan defines
//                                (comm::WindowSync::expected_per_micro), every rank and window
//   measured (timed steps: per step the slowest rank, then the median over steps; docs/validate.md
//     and runner/report.hpp give the fields), the per-window table, the environment, warnings
//     (oversubscribed cores, BatchNorm at a small micro_batch) and notes on batch-dependent layers.
// Why: docs/DESIGN.md, "Runner": the verdicts are formulas over the record, apart from the loop.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/gradients.hpp"
#include "runner/run_record.hpp"
#include "workloads/workload.hpp"

namespace gaccum::runner {

// What rank 0 knows of the run besides the rank records.
struct RunFacts {
  RunSpec spec;  // seed: the data stream used
  WorkloadFacts workload;
  bool token_workload = false;
  workloads::BatchDependence dependence;
  Count expected_collectives = 0;       // per step (comm::WindowSync::expected_collectives)
  std::vector<Count> expected_per_micro;  // per micro-step of a full window (expected_per_micro)
  Count buckets = 0;                      // DDP buckets, or the sharded plan's wrapped units
  // zero3/hsdp on a model that is not a sequence of blocks: why its units are gathered all at once
  // (Workload::staging_rejection), else "".
  std::string whole_model_gathering;
  std::string launcher, backend, device;
  bool cpu = true;
  nlohmann::json launch = nlohmann::json::object();  // launcher-side facts ("launcher" overrides)
};

// The gradient checks of the run's windows and the checks over every rank's record, in the order
// above (appended to `checks`, which holds the rank agreement).
void add_record_checks(std::vector<CheckRecord>& checks, const RunFacts& f, const std::vector<RankRecord>& ranks,
                       const WindowChecks& step0, const std::optional<WindowChecks>& partial);

// The complete record of a run whose ranks all finished.
RunRecord assemble_run(const RunFacts& f, std::vector<CheckRecord> checks, const std::vector<RankRecord>& ranks);

// Below this many samples per forward, BatchNorm statistics are noisy (a warning, not a failure).
inline constexpr Count kSmallBatchNormMicroBatch = 16;

}  // namespace gaccum::runner
