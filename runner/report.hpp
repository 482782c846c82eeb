// What: validation.json (the document) and the printed table of a validation.
//   validation.json, schema_version 1:
//     {"schema_version": 1, "kind": "gaccum-tune/validation", "created_utc", "tool",
//      "ok", "exit_code", "accumulation": "correct"|"incorrect"|"not_run", ["accumulation_reason":
//      why not run: the failure of the first run that did not finish], "prediction": "held"|
//      "missed"|"not_checked", "runs": [run...]}
//     run (completed):  {"config", "environment", "warnings", "checks": [{"name", "status":
//                        pass|fail|n/a, "detail" (for n/a: the reason), "numbers"}], "measured",
//                        "steps": [per-step raw times of every rank], "ok", ["prediction",
//                        "comparison"]}
//     run (a rank failed): {"config", "ok": false, "checks": [every check n/a, detail "not run:
//                        ..."], "failure": "<one line naming the rank>"}
//   accumulation: incorrect when a check of any run FAILed; else not_run when a run did not
//     finish (a rank died, hung, ran out of memory, Ctrl-C): its checks never ran, so it is
//     neither correct nor incorrect; else correct (every check PASS or n/a).
//   measured (timed steps only; per step the slowest rank, then the median over steps):
//     step_time {median, p10, p90, mean, min, max}; throughput_samples_per_s = global_batch /
//     median; tokens_per_s = mean real tokens per window / median (sequence workloads);
//     peak_memory (max over ranks) and peak_memory_per_rank: tracker high-water mark over the
//     timed steps; comm_exposed (of the last rank to arrive at the step's final collective) and
//     straggler_wait (how much longer the other ranks stayed exposed waiting for it; see
//     runner/checks.hpp split_exposed) / comm_total (comm/grad_sync.hpp); compute = step_time -
//     comm_exposed - optimizer; optimizer; rank_skew = slowest minus fastest rank's arrival at
//     the step's final synchronisation; collectives_per_step, collectives_per_micro_step,
//     collectives_launched_in_backward; comm_buffer_bytes; noise_scale (runner/checks.hpp);
//     loss {first_window, last_window}: the window's mean loss over its real samples/tokens
//     across ranks (steps[].loss holds it for every window), comparable with any other
//     trainer's loss on the same data stream.
//   Units: seconds, bytes, samples/s, tokens/s.
// Why: the reports and CI read the file; people read the table. No LibTorch. The JSON of a run
//      is written and read by runner/run_record.cpp only.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/run_record.hpp"

namespace gaccum::runner {

inline constexpr int kValidationSchemaVersion = 1;

nlohmann::json validation_document(const std::vector<RunRecord>& runs, int exit_code);

// The human table of one run (completed or failed), lines ending in '\n'.
std::string format_run(const RunRecord& run);

// Names of the failed checks / gated comparison rows of a run ("gradient_equivalence",
// "prediction:step_time").
std::vector<std::string> failed_items(const RunRecord& run);

// The accumulation verdict, with one traits table: the printed word and validation.json's.
enum class Accumulation { correct, incorrect, not_run };
struct AccumulationTraits {
  Accumulation verdict;
  std::string_view label;   // "accumulation: CORRECT"
  std::string_view record;  // validation.json "accumulation"
};
inline constexpr AccumulationTraits kAccumulationTraits[] = {
    {Accumulation::correct, "CORRECT", "correct"},
    {Accumulation::incorrect, "INCORRECT", "incorrect"},
    {Accumulation::not_run, "NOT RUN", "not_run"},
};
constexpr const AccumulationTraits& traits(Accumulation a) {
  return kAccumulationTraits[static_cast<int>(a)];
}

// The two verdicts of a run, kept apart (docs/exit-codes.md): is the accumulation correct
// (the run finished and no check failed; not_run when it did not finish), and did the prediction
// hold (every gated row of the comparison within tolerance; nullopt when nothing was predicted,
// e.g. no --profile).
struct Verdicts {
  Accumulation accumulation = Accumulation::not_run;
  bool accumulation_correct() const { return accumulation == Accumulation::correct; }
  std::optional<bool> prediction_held;
};
Verdicts run_verdicts(const RunRecord& run);

// validate's exit code for runs that completed: 1 when an accumulation check failed in any run
// (or a run did not finish: the launch's own code replaces it, runner/validate.cpp), else 3 when
// a prediction missed its tolerance in any run, else 0.
inline constexpr int kExitPredictionMissed = 3;
int runs_exit_code(const std::vector<RunRecord>& runs);

}  // namespace gaccum::runner
