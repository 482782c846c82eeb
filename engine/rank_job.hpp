// What: one group of local rank processes, each running `<program> _worker --role ROLE --args
//       <dir>/args.json`, and what came of it. The one process-launch path of the profiler and
//       the runner:
//         <dir> = a private scratch directory ($TMPDIR/<prefix>-XXXXXX, removed afterwards, also
//                 on a signal: core/scratch_dir.hpp)
//         <dir>/args.json      the role's arguments, with "job_dir": <dir> added
//         <dir>/rank<r>.json   what rank r's role writes back (rank_result_path), if anything
//         <dir>/rank<r>.err    rank r's one error line ($GACCUM_ERROR_FILE, engine/rank_error.hpp)
//       The launch itself is comm::launch_local (fork/exec, the hosted store, the watchdog of the
//       whole group, Ctrl-C). On failure the outcome names the rank that ended the job, quotes
//       what that rank reported, and classifies the failure as an exit code.
// Why: both the profiler's rank groups and the runner's validation runs launch ranks; one
//      implementation means one error channel and one exit-code mapping (docs/DESIGN.md,
//      "Rank jobs").
#pragma once

#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "comm/launcher.hpp"
#include "core/units.hpp"

namespace gaccum::engine {

struct RankJob {
  std::string role;                                // the `_worker --role` name
  nlohmann::json args = nlohmann::json::object();  // the role's arguments ("job_dir" is added)
  int world_size = 1;
  Seconds deadline = 0;                    // whole job; 0 = none
  Seconds store_timeout = 60;              // the hosted store's timeout
  Seconds grace = 3;                       // SIGTERM, then SIGKILL after this long
  std::map<std::string, std::string> env;  // extra environment for every rank
  std::string executable;                  // empty: this program (comm::self_executable)
  std::string scratch_prefix = "gaccum-job";
};

struct RankJobOutcome {
  comm::LaunchResult launch;
  bool ok = false;
  // One line when !ok: what ended the launch, naming the rank, then " -- " and what that rank
  // (or, when it said nothing, the first rank with a message that is not a lost peer) reported.
  std::string failure;
  // 0 ok; when !ok, the class of the rank named as the cause: kExitHung (the deadline passed, a
  // rank's watchdog fired, or a rank still ran when its peers gave up on it), kExitOutOfMemory,
  // 2 (bad input found inside the rank), comm::kExitPeerLost (any other death: a signal, or an
  // exit status of its own); 1 when the launcher was interrupted.
  int exit_code = 0;
};

// Launches the job and waits for it. `read_back(dir, outcome)` runs while the scratch directory
// still exists, whatever the outcome, so the caller can read its ranks' result files.
RankJobOutcome run_rank_job(const RankJob& job,
                            const std::function<void(const std::string& dir, const RankJobOutcome&)>& read_back);

// <job_dir>/rank<r>.json: where a role writes rank r's result.
std::string rank_result_path(const std::string& job_dir, int rank);

// The exit-code class of a launch (see RankJobOutcome::exit_code).
int launch_exit_code(const comm::LaunchResult& res);

}  // namespace gaccum::engine
