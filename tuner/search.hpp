// What: the exhaustive search: every (micro_batch b, accum_steps k, world_size p, strategy, and
//       plan: sharding x precision x checkpointing as the limits allow) with
//       b*k*p equal to a target global batch (or inside a range), each predicted by the cost
//       model, checked against the limits, scored by the objective and ranked.
// Why: the spaces are small enough to enumerate exactly (divisor pairs of B/p), so the answer is
//      the true optimum of the model, not a heuristic; every evaluated config is kept with the
//      constraints it violates so the CSV shows why a config was not chosen.
// Speed: ~1e6 candidates/s is the floor (bench/bench_tuner.cpp); violations are a bit mask, not
//      strings, and text is made only for the rows that are printed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/cost_model.hpp"
#include "tuner/tune_request.hpp"

namespace gaccum::tuner {

// Constraint violations of one candidate (bit mask).
enum Violation : std::uint8_t {
  kNoViolation = 0,
  kAccumSteps = 1,       // accum_steps > --max-accum-steps
  kMicroBatchRange = 2,  // micro_batch above the measured range (no --extrapolate)
  kMemory = 4,           // predicted peak memory > cap x (1 - margin)
  kModelRaises = 8,      // micro_batch below the smallest the model ran at (it raised when profiled)
};

struct Candidate {
  model::Prediction prediction;
  std::uint8_t violations = kNoViolation;
  bool rankable = true;  // false: priced only (every-step under --strategy auto)
  bool same_run_as_overlap = false;  // every-step at accum_steps 1 beside overlap: one run, ranked once
  double score = 0;      // objective value oriented so that lower is better
  Count rank = 0;        // 1 = best; 0 = not ranked (infeasible or priced only)

  bool feasible() const { return violations == kNoViolation; }
  const model::Config& config() const { return prediction.config; }
};

struct SearchResult {
  Limits limits;
  Objective objective = Objective::throughput;
  std::vector<Candidate> candidates;   // order: global_batch, world_size, micro_batch, strategy
  std::vector<std::uint32_t> ranking;  // indices into candidates of ranked ones, best first
  Count indivisible_pairs = 0;         // (global_batch, world_size) pairs with p not dividing B
  Count schedule_refused = 0;          // (b, m) pairs the pipeline schedule cannot run (m < pp, ...)
  std::string schedule_refusal;        // one of their reasons (model/pipeline.hpp schedule_rejection)
  Count memory_pruned = 0;             // layout candidates not priced: a smaller micro_batch was already over the limit
  Count layouts_refused = 0;           // searched layouts the model refuses (heads over tp, ...)
  std::string layout_refusal;          // one of them with its reason
};

// Objective value in its natural unit: samples/s (throughput), GPU-seconds per sample (cost),
// seconds per S_min optimizer steps (time-to-target: (1 + B_noise/B) x step_time). 0 when
// time-to-target has no noise scale.
double objective_value(Objective o, const model::Prediction& p, std::optional<double> noise_scale);
// Lower-is-better key of objective_value (throughput is negated).
double objective_score(Objective o, const model::Prediction& p, std::optional<double> noise_scale);
// A score rounded to 12 significant digits: the ranking compares these, so scores that differ only
// by floating-point rounding tie (and the tie-breaks decide).
double ranking_key(double score);

SearchResult search(const model::CostModel& model, const TuneRequest& request);
SearchResult search(const model::CostModel& model, const TuneRequest& request, const Limits& limits);

// "peak memory 1.20 GiB > limit 1.08 GiB; accum_steps 128 > --max-accum-steps 64", or for a
// priced-only every-step row "every-step: priced, not ranked (--strategy every-step ranks it)".
std::string reason_text(const Candidate& c, const Limits& limits);

// Divisors of n in ascending order, and how many there are.
std::vector<Count> divisors(Count n);
std::size_t divisor_count(Count n);

// Largest micro_batch in [1, upper] whose predicted peak with the shape's world_size, strategy
// and plan is within limits.limit (memory is monotone in micro_batch and independent of
// accum_steps); 0 when even micro_batch 1 is over.
Count max_micro_batch_within(const model::CostModel& model, const Limits& limits, const model::Config& shape,
                             Count upper);

}  // namespace gaccum::tuner
