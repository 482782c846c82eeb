// What: the one error channel of a rank process and the exit codes rank processes use.
//   - where this rank is (RankPosition: "before step 0 (connecting through MASTER_ADDR=...)",
//     "in step 3 micro-step 2"), set by the rank's loop, read by the watchdog and by messages;
//   - report_rank_error: "rank R: msg" on stderr and, when the launcher set $GACCUM_ERROR_FILE
//     (engine/rank_job.hpp does for every rank), in that file, one line, which the launcher
//     quotes when it names the rank that ended the job;
//   - rank_failure_exit_code: an exception escaping a rank, mapped to its exit code and reported.
// Why: the profiler's and the runner's ranks fail the same ways (a peer lost, out of memory, bad
//      input, a hang), and the launcher classifies them by exit code (rank_job.hpp); one mapping
//      keeps both honest (docs/DESIGN.md, "Rank jobs").
#pragma once

#include <exception>
#include <string>

#include "core/units.hpp"

namespace gaccum::engine {

// Exit codes of a rank process besides 0 (done), 1 (a check failed / an error) and 2 (bad input).
// comm::kExitPeerLost (86) when a collective or the store failed.
inline constexpr int kExitOutOfMemory = 87;
inline constexpr int kExitHung = 88;  // the rank's watchdog saw no progress for its limit

// Where this process's rank loop is (process-wide; -1 = not started).
class RankPosition {
 public:
  static void set(Count step, Count micro);
  static void set_micro(Count micro);
  static Count step();
  // A phase outside the step loop, e.g. "the memory sweep at micro_batch 4" (the profiler's
  // phases); "" clears it.
  static void set_phase(const std::string& phase);
  // "in <phase>" when a phase is set; else "before step 0 (connecting through MASTER_ADDR=...
  // MASTER_PORT=...: ...)" before the first step (a port that accepts but never answers is the
  // usual cause of a wait there), else "in step S micro-step M".
  static std::string describe();
};

// Writes "rank R: msg" to stderr and to $GACCUM_ERROR_FILE when set.
void report_rank_error(int rank, const std::string& msg);

// Maps an exception escaping a rank to its exit code and reports it: std::bad_alloc / LibTorch
// out of memory -> kExitOutOfMemory, InputError -> 2, a failed collective or store operation
// (comm/communicator.cpp) -> comm::kExitPeerLost, anything else -> 1.
int rank_failure_exit_code(int rank, std::exception_ptr e);

}  // namespace gaccum::engine
