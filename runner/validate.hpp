// What: `gaccum-tune validate` as a library call: resolves the configuration(s) to run (one
//       from the flags, or the top N picks of a tune result), launches world_size local rank
//       processes per configuration (engine::run_rank_job re-executing this binary as
//       `_worker --role validate-rank`), or, under torchrun/Slurm/mpirun, runs as one rank of
//       the job; compares the measured figures with the cost model's prediction when a profile
//       is given; and writes validation.json (rank 0).
// Why: docs/DESIGN.md, Runner: a real distributed accumulation run that proves (or refutes) a
//      recommendation.
//
// Threads: threads_per_rank 0 means the default: the profile's hardware.threads_per_rank with
// --profile, else max(1, cores / ranks on this host); every rank calls torch::set_num_threads.
// A tune result (--from-tune) is the result.json of `gaccum-tune tune` (schema
// "gaccum-tune/tune-result", reports/json_printer.hpp; versions up to the current one): its
// "picks"[i].config give micro_batch, accum_steps, world_size, strategy and sharding (none, zero1,
// zero2 or zero3; the plan must be fp32 without checkpointing); "model.workload_name" names the workload when --workload
// is not given; without --profile, the profile the tune used ("source": {"kind": "profile",
// "path"}) gives the predictions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/run_record.hpp"
#include "runner/run_spec.hpp"

namespace gaccum::runner {

struct ValidateOptions {
  RunSpec spec;                    // threads_per_rank 0 = default (above); device may be "auto"
  bool world_size_given = true;    // false: take WORLD_SIZE from the job (distributed) or spec's
  bool tolerances_given = false;   // false: default_tolerances(dtype)
  std::string profile_path;
  // false: the profile was not asked for (the cached one of this workload): its prediction is
  // printed beside each figure but does not decide the exit code (--profile makes it a verdict).
  bool prediction_is_verdict = true;
  double tolerance_pct = 10;
  std::string from_tune;
  Count top = 3;
  std::string output = "validation.json";
};

struct ValidateOutcome {
  nlohmann::json document;         // what was written to `output` (rank 0)
  std::vector<RunRecord> runs;
  std::vector<std::string> failures;  // one line per run whose ranks failed (rank named)
  int exit_code = 0;               // 0 all checks (and predictions) pass, 1 otherwise; when ranks
                                   // failed: 86 died, 87 out of memory, 88 hung, 2 bad input
                                   // inside a rank, 1 interrupted (docs/exit-codes.md)
  bool wrote_output = false;       // false on ranks other than 0
};

ValidateOutcome validate(ValidateOptions options);

// Configurations from a tune result file (above). InputError naming --from-tune when it is not
// a tune result or has no usable pick.
struct TunePick {
  Count micro_batch = 0, accum_steps = 0, world_size = 0;
  Strategy strategy = Strategy::overlap;
  ShardingChoice sharding;
};
std::vector<TunePick> read_tune_picks(const nlohmann::json& result, Count top, const std::string& what);
std::string tune_workload_name(const nlohmann::json& result);  // "" if none
std::string tune_profile_path(const nlohmann::json& result, const std::string& result_path);  // "" if none

}  // namespace gaccum::runner
