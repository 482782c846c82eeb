// What: `tune`: search + ranking + explanations of the top picks + LR and critical-batch guidance
//       + Pareto front + the memory curve the reports chart, as one TuneResult value.
// Why: the CLI, the reports and `check` (throughput within a tolerance of the best for the same
//      B) all consume the same result; reports/ prints it and adds nothing computed.
// Errors: InputError for unusable requests (naming the flag); InfeasibleError when no config
//         is feasible, with the binding constraint and the smallest change (infeasibility.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/cost_model.hpp"
#include "tuner/critical_batch.hpp"
#include "tuner/explanation.hpp"
#include "tuner/lr_advice.hpp"
#include "tuner/pareto.hpp"
#include "tuner/search.hpp"
#include "tuner/tune_request.hpp"

namespace gaccum::tuner {

// Peak memory at one (world_size, micro_batch), for the "memory vs micro_batch" chart.
struct MemoryCurvePoint {
  Count world_size = 0;
  Count micro_batch = 0;
  Bytes peak = 0;
  bool extrapolated = false;  // above the measured micro_batch range
};

// every-step vs overlap (and fused) for one (micro_batch, accum_steps, world_size) setting.
struct PricedSetting {
  model::Config config;
  StrategyPrice price;
};

// The best config of another plan axis value at the best pick's global batch (why it loses), or
// why none fits.
struct PlanAlternative {
  std::string axis;   // sharding | precision | checkpointing
  std::string value;  // e.g. "zero1", "fp32", "full"
  std::optional<std::uint32_t> best;  // its best ranked candidate
  Bytes min_peak = 0;                  // its smallest predicted peak
  model::Config min_peak_config;
  std::string text;
};

// How far the pick rests on measurements the profile could not confirm (model Prediction::
// unconfirmed). With the pick priced from some: the best ranked config priced from confirmed ones
// only. With the pick confirmed: the best ranked config it beat that is priced from unconfirmed
// ones (a disturbance that slowed those can have handed the pick its place). `lead`: how much
// better the pick's objective is than the other's (0.16 = 16%).
struct TrustCaveat {
  bool applies = false;
  bool pick_confirmed = true;
  std::vector<std::string> pick_unconfirmed;   // what the pick is priced from
  std::optional<std::uint32_t> other;          // candidate index (see above)
  std::vector<std::string> other_unconfirmed;  // what `other` is priced from (pick confirmed)
  double lead = 0;
  std::string text;  // one paragraph, "" when !applies
};

// Builds the caveat from a search's ranked candidates (exposed for tests).
TrustCaveat trust_caveat(const SearchResult& res);

struct TuneResult {
  TuneRequest request;
  model::ModelInfo info;
  SearchResult search;
  std::vector<Explanation> picks;  // top `request.top`, best first
  LrAdvice lr;                     // for the best pick's global batch
  CriticalBatchAdvice critical;    // for the best pick's global batch
  std::vector<ParetoPoint> pareto;
  std::vector<MemoryCurvePoint> memory_curve;
  std::vector<PricedSetting> strategy_prices;  // distinct settings with world_size > 1, best first
  std::vector<PlanAlternative> plan_alternatives;
  TrustCaveat trust;
  std::vector<std::string> notes;              // limits, CPU-as-GPU, extrapolation, strategy notes

  const Candidate& best() const { return search.candidates[search.ranking.front()]; }
};

TuneResult tune(const model::CostModel& model, TuneRequest request);

}  // namespace gaccum::tuner
