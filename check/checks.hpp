// What: the eight pre-launch checks, each a pure function of the resolved job (and the cost
//       model where it needs predictions) returning PASS / WARN / FAIL / SKIP with a one-line
//       reason, a concrete fix and its numbers:
//   1 batch_arithmetic   micro_batch x accum_steps x world_size == global_batch        FAIL
//   2 memory             predicted peak <= min(cap, device) (else FAIL), and <= that limit
//                        x (1 - margin) (else WARN: inside the safety margin); with the
//                        largest micro_batch that keeps the margin
//   3 rank_agreement     rank_agreement.hpp (SKIP without --distributed)
//   4 epoch_remainder    dataset_size % (b k p) != 0 leaves a partial accumulation window:
//                        WARN with the leftover samples and sizes / accum_steps that divide;
//                        FAIL when the dataset is smaller than one global batch
//   5 efficiency         predicted throughput >= (1 - tolerance) x the tuner's best setting for
//                        the same global batch and world_size, else WARN naming it
//   6 strategy           every-step (DDP without no_sync) priced against overlap: FAIL when it
//                        loses more than --tolerance of throughput, WARN when it loses less.
//                        Why FAIL: every-step computes the same gradients as overlap with the
//                        same b, k, p; its extra allreduces are pure waste with a one-line fix
//                        (no_sync on the first k-1 micro-steps), unlike a tuning trade-off.
//   7 learning_rate      lr against lr_ref scaled to the global batch (linear for SGD,
//                        square-root for Adam-type, tuner/lr_advice.hpp): WARN beyond
//                        --lr-tolerance, FAIL beyond a factor kLrFailFactor either way
//   8 critical_batch     global batch against B_noise (tuner/critical_batch.hpp): WARN above it
//                        with the extra-samples factor B / B_noise
// The "global batch" of checks 4-8 is b x k x p, what one optimizer step really takes (equal to
// the stated global_batch unless check 1 fails).
// Why: each check is testable alone against hand-computed numbers (tests/unit/test_check_*).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "check/check_inputs.hpp"
#include "core/status.hpp"
#include "model/cost_model.hpp"

namespace gaccum::check {

using gaccum::Status;  // core/status.hpp: to_string gives "PASS", "WARN", "FAIL", "SKIP"
using gaccum::to_string;

struct CheckResult {
  int number = 0;
  std::string id;     // batch_arithmetic, memory, ...
  std::string title;  // "batch arithmetic", ...
  Status status = Status::skip;
  std::string reason;  // one line with the numbers
  std::string fix;     // one line; empty on PASS / SKIP
  nlohmann::ordered_json data = nlohmann::ordered_json::object();  // the numbers, machine-readable
};

inline constexpr double kLrFailFactor = 2.0;

CheckResult check_batch_arithmetic(const ResolvedJob& job);
CheckResult check_memory(const ResolvedJob& job, const model::CostModel* model);
CheckResult check_epoch_remainder(const ResolvedJob& job);
CheckResult check_efficiency(const ResolvedJob& job, const model::CostModel* model);
CheckResult check_strategy(const ResolvedJob& job, const model::CostModel* model);
CheckResult check_learning_rate(const ResolvedJob& job);
CheckResult check_critical_batch(const ResolvedJob& job, const model::CostModel* model);
// 9, only for a tensor/pipeline/context-parallel layout: the schedule's and the layout's rules
// (FAIL naming the fix), the bubble (WARN above 25%).
CheckResult check_layout(const ResolvedJob& job, const model::CostModel* model);

// The configuration the job runs: (b, k, p, strategy).
model::Config job_config(const ResolvedJob& job);
// The job's prediction. A job recomputing a fraction f of its layers (ResolvedJob::
// recomputed_fraction) is priced f of the way from recomputing none to recomputing all
// (model/recompute_mix.hpp).
// `bounds`, when given and the job recomputes a fraction: the full and no-recompute peaks it lies
// between (the two predictions the estimate is made of, not priced again).
struct RecomputeBounds {
  Bytes full_peak = 0, none_peak = 0;
};
model::Prediction job_prediction(const ResolvedJob& job, const model::CostModel& m,
                                 std::optional<RecomputeBounds>* bounds = nullptr);
// Per-rank memory limit: min(cap, device memory) (cap alone when the device memory is unknown).
// InputError when the cap is a share of a device memory the model does not know.
Bytes hard_memory_limit(const ResolvedJob& job, const model::ModelInfo& info);

}  // namespace gaccum::check
