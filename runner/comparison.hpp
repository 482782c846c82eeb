// What: measured vs predicted: each figure of a validation run beside the cost model's
//       prediction for the same (micro_batch, accum_steps, world_size, strategy), with the error
//       in percent and a verdict.
//   gated figures (pass/fail against the tolerance): step_time (median), throughput,
//     peak_memory; exact: collectives_per_step, comm_buffer_bytes.
//   informational (error shown, no verdict: small absolute values make percentages swing):
//     compute, comm_exposed, comm_total, optimizer, tokens/s; and the band check: does the run's
//     95% median interval overlap the predicted band (the step priced at the ends of the
//     profile's 95% median intervals)?
// Why: the runner is the proof of a recommendation: a prediction off by more than the
//      tolerance fails the validation (exit 1).
// No LibTorch (the typed record + model/prediction.hpp).
#pragma once

#include "model/prediction.hpp"
#include "runner/run_record.hpp"

namespace gaccum::runner {

// One row per figure above (JSON: runner/run_record.cpp, "comparison").
Comparison compare_to_prediction(const Measured& measured, const model::Prediction& predicted, double tolerance_pct);

}  // namespace gaccum::runner
