// What: the record of one validation run as types, and its one JSON writer and reader.
//   RankRecord   what each rank sends rank 0 after the last window: who it is (host, pid,
//                threads), its memory high-water mark, its hashes, and its per-window series
//                (RankSteps; one entry per window, timed or not).
//   RunRecord    what rank 0 assembles (runner/record_checks.hpp) and validate completes with the
//                prediction: config (the RunSpec as run, plus the workload's facts), environment,
//                warnings, model notes, checks, measured figures, the per-window table, the
//                verdict; or, for a launch that failed, the spec and the failure line.
//   JSON: the "runs" of validation.json (schema in runner/report.hpp, kValidationSchemaVersion);
//   run_record_from_json reads what to_json wrote (and names the field it cannot read).
// Why: the runner's checks, its comparison with the prediction and its printed table read
//      typed fields, not strings looked up in JSON (docs/DESIGN.md, "Runner").
// Units: seconds, bytes, counts.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/profile.hpp"
#include "core/status.hpp"
#include "runner/checks.hpp"
#include "runner/run_spec.hpp"

namespace gaccum::runner {

// One rank's series, one entry per window (g_*_sq < 0: not measured in that window).
struct RankSteps {
  std::vector<double> step_time, compute, arrival, exposed, comm_total, optimizer, instrumentation;
  std::vector<Count> collectives, launched_in_backward, nonzero_at_start, local_terms, local_samples, global_terms;
  std::vector<std::vector<Count>> collectives_per_micro;
  std::vector<double> g_small_sq, g_big_sq;
  std::vector<double> loss_sum;  // this rank's unnormalised loss sum per window
};

struct RankRecord {
  int rank = 0, local_rank = 0;
  std::string host;
  long pid = 0;
  int threads = 0, interop_threads = 0, cores = 0;
  Bytes peak_memory = 0, memory_at_reset = 0, comm_buffer_bytes = 0;
  std::string grads_hash_step0, params_hash_final;
  RankSteps steps;
  CollectiveWait collective_wait = CollectiveWait::block;  // how it waited for collectives (core/backend.hpp)
};
nlohmann::json to_json(const RankRecord& r);
RankRecord rank_record_from_json(const nlohmann::json& j, const std::string& what);

// The checks of a validation run, in the order a run records them (runner/record_checks.hpp says
// what each one compares), with one traits table: the name in validation.json and the tables.
enum class RunCheck {
  rank_agreement,
  gradient_equivalence,
  negative_control,
  zero_grad_at_window_start,
  parameters_identical,
  token_normalisation,
  partial_window,
  collectives_match_strategy,
  schedule_order,
  microbatches_in_flight,
  stage_memory,
  tensor_parallel_collectives,
};
struct RunCheckTraits {
  RunCheck check;
  std::string_view name;
  bool pipeline_only = false;  // recorded by tensor/pipeline runs (pp or tp > 1) only
};
inline constexpr RunCheckTraits kRunCheckTraits[] = {
    {RunCheck::rank_agreement, "rank_agreement"},
    {RunCheck::gradient_equivalence, "gradient_equivalence"},
    {RunCheck::negative_control, "negative_control"},
    {RunCheck::zero_grad_at_window_start, "zero_grad_at_window_start"},
    {RunCheck::parameters_identical, "parameters_identical"},
    {RunCheck::token_normalisation, "token_normalisation"},
    {RunCheck::partial_window, "partial_window"},
    {RunCheck::collectives_match_strategy, "collectives_match_strategy"},
    {RunCheck::schedule_order, "schedule_order", true},
    {RunCheck::microbatches_in_flight, "microbatches_in_flight", true},
    {RunCheck::stage_memory, "stage_memory", true},
    {RunCheck::tensor_parallel_collectives, "tensor_parallel_collectives", true},
};
constexpr std::string_view to_string(RunCheck c) {
  return kRunCheckTraits[static_cast<int>(c)].name;
}

// One check's outcome: PASS, FAIL, or n/a (Status::skip) with the reason in `detail`
// (core/status.hpp).
struct CheckRecord {
  std::string name;
  Status status = Status::pass;
  std::string detail;
  nlohmann::json numbers = nlohmann::json::object();  // the check's own figures (free-form)
};
CheckRecord check_record(RunCheck check, Status status, std::string detail,
                         nlohmann::json numbers = nlohmann::json::object());
// Every check of kRunCheckTraits that `checks` does not hold yet, appended as n/a with `reason`
// (e.g. "not run: the run failed: rank 1 (pid 7) was killed by SIGKILL"): a run that failed or
// stopped records the checks it never ran as not run, never as failed.
// The pipeline-only checks are added for pipeline runs only (`pipeline`).
void add_not_run_checks(std::vector<CheckRecord>& checks, const std::string& reason, bool pipeline = false);

// One pipeline rank's figures (runner/pipeline_run.hpp), the timed windows' medians.
struct StageRecord {
  int rank = 0;
  Count stage = 0, replica = 0;
  std::vector<std::string> order;        // window 0 as executed: "F3.1" forward of microbatch 3, chunk 1
  Count in_flight = 0;                   // most microbatch chunks held at once (measured)
  Count in_flight_model = 0;             // the schedule simulation's count (model/pipeline.hpp)
  Bytes peak_memory = 0, predicted_peak = 0;
  std::vector<Bytes> chunk_activations;  // per chunk: bytes one microbatch holds from F to B
  std::vector<Seconds> forward, backward;  // per chunk: mean seconds of one operation (timed windows)
  Seconds busy = 0;                      // forward + backward seconds per window
  Seconds idle = 0;                      // pipeline makespan - busy (measured)
  Seconds predicted_idle = 0;            // the simulation's, from the measured operation times
};
// The pipeline of a run: measured bubble (idle over the makespan, averaged over ranks; the
// makespan from the first forward on stage 0 to the last operation on any rank, one host's
// monotonic clock) vs the simulation replaying the measured operation times, and the closed form.
struct PipelineMeasure {
  std::vector<StageRecord> ranks;
  Seconds makespan = 0, predicted_makespan = 0;
  double bubble_fraction = 0, predicted_bubble_fraction = 0, closed_form_bubble_fraction = 0;
  Seconds predicted_step_time = 0;  // simulated makespan + the measured sync and optimizer step
  Seconds p2p = 0;                  // one hidden state between neighbouring stages (ping-pong)
};
nlohmann::json to_json(const PipelineMeasure& p);
PipelineMeasure pipeline_measure_from_json(const nlohmann::json& j, const std::string& what);

struct Measured {
  TimingStats step_time;  // median, p10, p90, mean, min, max, ci_lo/ci_hi (samples not written)
  double throughput_samples_per_s = 0, tokens_per_s = 0;
  Bytes peak_memory = 0;
  std::vector<Bytes> peak_memory_per_rank;
  Bytes resident_memory = 0;  // max over ranks of the bytes held when the timed steps began (model states + buffers)
  // comm_exposed: the last rank to arrive (runner/checks.hpp split_exposed); straggler_wait: how
  // much longer the others stayed exposed waiting for it.
  Seconds comm_exposed = 0, straggler_wait = 0, comm_total = 0, compute = 0, optimizer = 0, rank_skew = 0;
  Count collectives_per_step = 0, collectives_launched_in_backward = 0;
  std::vector<Count> collectives_per_micro_step;
  Bytes comm_buffer_bytes = 0;
  Count timed_steps = 0;
  double loss_first_window = 0, loss_last_window = 0;
  NoiseScale noise_scale;
};

// One window of the raw table: the slowest rank's figures and every rank's columns.
struct WindowRow {
  Count window = 0;
  bool timed = false, partial = false;
  Count samples = 0, loss_terms = 0;
  double loss = 0;
  Seconds step_time = 0, exposed_comm = 0, straggler_wait = 0, rank_skew = 0;
  nlohmann::json per_rank = nlohmann::json::object();  // key -> [value per rank]
};

struct RankEnvironment {
  int rank = 0, local_rank = 0;
  std::string host;
  long pid = 0;
  int threads = 0, interop_threads = 0, cores = 0;
  CollectiveWait collective_wait = CollectiveWait::block;  // "block" in records before 2026-12-03
};

struct Environment {
  std::string launcher, backend, device;
  Count world_size = 0;
  int threads_per_rank = 0;
  bool oversubscribed = false;
  std::vector<RankEnvironment> ranks;
  std::string tool_version, libtorch_version, gloo_version;
  nlohmann::json launch = nlohmann::json::object();  // launcher-side facts, e.g. launcher_wall_s
};

struct WorkloadFacts {
  std::string hash, kind;
  Count param_count = 0;
  Bytes param_bytes = 0;
};

// One row of measured vs predicted (runner/comparison.hpp).
enum class Gate { tolerance, exact, info };
struct ComparisonRow {
  std::string figure, unit;
  double measured = 0, predicted = 0;
  std::optional<double> error_pct;  // none: predicted 0 and measured not
  Gate gate = Gate::info;
  std::optional<Status> status;  // pass / fail for gated rows; none: informational
};
// Whether the run's median step time agrees with the predicted band: the run's own 95% median
// interval overlaps [predicted lo, hi] (model/prediction.hpp). Informational, no verdict.
struct BandCheck {
  Seconds predicted_lo = 0, predicted_hi = 0;
  Seconds measured = 0, measured_lo = 0, measured_hi = 0;
  bool inside = false;
};
struct Comparison {
  double tolerance_pct = 0;
  bool ok = true;
  bool verdict = true;  // false: informational (a cached profile nobody asked to hold the run to)
  std::vector<ComparisonRow> rows;
  std::optional<BandCheck> band;  // absent: the prediction has no band
};

struct RunRecord {
  RunSpec spec;                        // as run (seed: the data stream used)
  std::optional<WorkloadFacts> facts;  // completed runs
  // A launch that failed: the one line naming the rank, and the launcher's wall time (`checks`
  // then holds every check as n/a, not run).
  std::optional<std::string> failure;
  std::optional<Seconds> launcher_wall_s;
  std::optional<std::string> stopped;  // e.g. "rank agreement failed": no training ran
  std::optional<Environment> environment;
  std::vector<std::string> warnings, model_notes;
  std::vector<CheckRecord> checks;
  std::optional<Measured> measured;
  std::vector<WindowRow> steps;
  std::optional<nlohmann::json> prediction;  // model/prediction_json.hpp's object
  std::optional<Comparison> comparison;
  std::optional<PipelineMeasure> pipeline;  // pipeline runs
  bool ok = false;
};

nlohmann::json to_json(const RunRecord& r);
RunRecord run_record_from_json(const nlohmann::json& j, const std::string& what);

}  // namespace gaccum::runner
