// What: measured vs predicted: each figure of a validation run beside the cost model's
//       prediction for the same (micro_batch, accum_steps, world_size, strategy), with the error
//       in percent and a verdict.
//   gated figures (pass/fail against the tolerance): step_time (median), throughput,
//     peak_memory; exact: collectives_per_step, comm_buffer_bytes.
//   informational (error shown, no verdict: small absolute values make percentages swing):
//     step_time p90 vs the upper band, compute, comm_exposed, comm_total, optimizer, tokens/s.
// Why: the runner is the proof of a recommendation: a prediction off by more than the
//      tolerance fails the validation (exit 1).
// No LibTorch (plain JSON + model/prediction.hpp).
#pragma once

#include <nlohmann/json.hpp>

#include "model/prediction.hpp"

namespace gaccum::runner {

// `measured` is the run record's "measured" object. Returns {"tolerance_pct", "ok", "rows":
// [{"figure", "unit", "measured", "predicted", "error_pct", "gate": "tolerance"|"exact"|"info",
// "status": "pass"|"fail"|"info"}]}.
nlohmann::json compare_to_prediction(const nlohmann::json& measured, const model::Prediction& predicted,
                                     double tolerance_pct);

}  // namespace gaccum::runner
