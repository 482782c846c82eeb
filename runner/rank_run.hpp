// What: one rank's part of a validation run: joins the job (a rendezvous that names missing
//       ranks), agrees with the other ranks on the run's identity, trains total_windows()
//       accumulation windows (runner/accumulation_loop.hpp) with the run's observer attached
//       (runner/run_observer.hpp), sends its RankRecord to rank 0, and (rank 0) assembles the
//       run's record (runner/record_checks.hpp).
// Why: docs/DESIGN.md, "Runner". The same function runs under our own launcher (`_worker --role
//      validate-rank`, engine/rank_job.hpp) and under torchrun/Slurm/mpirun (`gaccum-tune
//      validate` on every rank).
// Step 0 (never timed) carries the gradient checks on rank 0; the partial window (if run) is
// checked the same way and never timed. Peak memory: the tracker's high-water mark over the
// timed steps (reset before the first).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/rank_env.hpp"
#include "engine/watchdog.hpp"
#include "runner/faults.hpp"
#include "runner/record_checks.hpp"
#include "runner/run_record.hpp"
#include "runner/run_spec.hpp"

namespace gaccum::comm {
class Communicator;
}

namespace gaccum::runner {

inline constexpr const char* kValidateRankRole = "validate-rank";

struct RankRunOptions {
  nlohmann::json launch = nlohmann::json::object();  // launcher-side facts for the record
  std::string key_prefix = "gaccum";                 // store namespace (one per run of a job)
  // Rank 0 only: receives the run record before any rank exits and returns the exit code all
  // ranks then use, e.g. after writing it and comparing it with a prediction.
  std::function<int(const RunRecord& record)> deliver;
};

// Returns this process's exit code (0 every check passed, 1 a check failed; the record was
// delivered either way). Throws InputError, CollectiveFailure (a failed collective from the c10d
// seam), std::bad_alloc / c10::Error; engine::rank_failure_exit_code maps them to exit codes.
int run_validation_rank(const RunSpec& spec, const comm::RankContext& ctx, const RankRunOptions& opts);

// The `_worker --role validate-rank` entry point: args {"spec": RunSpec, "launch": {...},
// "job_dir"}; rank 0 writes the record to engine::rank_result_path(job_dir, 0). Maps failures
// to exit codes with engine::rank_failure_exit_code.
int validate_rank_role(const nlohmann::json& args);

// Shared with the pipeline rank (runner/pipeline_run.hpp), which run_validation_rank hands a
// spec with pp > 1:
std::string host_name();
// The run's identity, which every rank must agree on before step 1.
nlohmann::json identity_of(const RunSpec& spec, const WorkloadIdentity& id, std::uint64_t seed,
                           const std::string& params_hash);
CheckRecord agreement_check(const RunSpec& spec, const WorkloadIdentity& id, std::uint64_t seed,
                            const std::vector<nlohmann::json>& identities);
// Every rank's identity gathered over `comm` (null: this rank alone) and checked: the check and
// the run's facts so far, and when the ranks disagree the record of the stopped run (every other
// check not run) for rank 0 to deliver.
struct AgreedStart {
  std::vector<CheckRecord> checks;
  RunFacts facts;
  std::optional<RunRecord> stopped;
};
AgreedStart agree_on_identity(const RunSpec& spec, const WorkloadIdentity& id, const std::string& params_hash,
                            comm::Communicator* comm);
// What every validation rank does first: the spec checked (InputError) and against the launch,
// this rank's test faults (a rank told never to join sleeps here), its watchdog (limit: --timeout
// + 2 s), torch's threads set and TF32 off.
struct RankStart {
  Faults faults;
  std::unique_ptr<engine::Watchdog> watchdog;
};
RankStart start_rank(const RunSpec& spec, const comm::RankContext& ctx);
// The run's exit code on every rank: rank 0 delivers `record` (opts.deliver decides the code;
// else 0 when `ok`, 1 otherwise) and publishes the code through the store, the others read it.
int share_verdict(int rank, comm::Communicator* comm, const RankRunOptions& opts, const RunRecord* record, bool ok);
// Who this rank is (host, pid, threads, how it waits for collectives): a RankRecord's first fields.
RankRecord rank_identity(const comm::RankContext& ctx, const comm::Communicator* comm);
// The job's communicator after a rendezvous that names missing ranks (null at world_size 1).
std::unique_ptr<comm::Communicator> join(const RunSpec& spec, const comm::RankContext& ctx, const std::string& device,
                                         const RankRunOptions& opts);

}  // namespace gaccum::runner
