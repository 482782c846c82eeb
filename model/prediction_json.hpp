// What: JSON forms of a Prediction and of a model's ModelInfo (the `predict --json` output, and
//       what reports / the runner's predicted-vs-measured embed).
// Why: one spelling of every field (the docs/DESIGN.md vocabulary) wherever a prediction is written.
// Units in the JSON: seconds, bytes, samples/s, tokens/s.
#pragma once

#include <nlohmann/json.hpp>

#include "model/cost_model.hpp"
#include "model/prediction.hpp"

namespace gaccum::model {

nlohmann::json to_json(const Config& c);
// The same fields in the docs/DESIGN.md order, global_batch included (reports, check verdicts).
nlohmann::ordered_json to_ordered_json(const Config& c);
nlohmann::json to_json(const Prediction& p);
nlohmann::json to_json(const PlanSupport& p);
// with_fit: include the fitted parameters and residuals (large).
nlohmann::json to_json(const ModelInfo& info, bool with_fit = true);

}  // namespace gaccum::model
