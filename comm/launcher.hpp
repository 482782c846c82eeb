// What: starts N local rank processes (fork/exec of a worker command), hosts their rendezvous
//       store, watches them, and ends all of them when one fails, the deadline passes or the
//       user presses Ctrl-C.
// Why: a rank that dies or hangs must end the whole run within a bounded time, with the rank
//      and its exit status named and no process left behind (docs/DESIGN.md, Runner: faults).
//
// Each child gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1,
// MASTER_PORT=<the launcher's store> and GACCUM_STORE=launcher, runs in its own process group
// (so the terminal's Ctrl-C reaches only the launcher, which then stops them) and dies with the
// launcher (PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "core/units.hpp"

namespace gaccum::comm {

// Exit status a rank uses when it stops because a collective or the store failed (typically a
// peer died). The launcher names the rank that failed first for another reason, not these.
inline constexpr int kExitPeerLost = 86;

struct LaunchOptions {
  std::vector<std::string> argv;         // argv[0]: program path (e.g. /proc/self/exe target)
  int world_size = 1;
  Seconds deadline = 0;                  // whole run; 0 = none
  Seconds grace = 3;                     // SIGTERM, then SIGKILL after this long
  Seconds store_timeout = 60;            // the hosted store's timeout
  std::map<std::string, std::string> env;  // extra environment for every rank
  // Sets per-rank environment variables (e.g. a result file path); may be empty.
  std::map<int, std::map<std::string, std::string>> rank_env;
};

struct RankStatus {
  int rank = 0;
  pid_t pid = 0;
  bool finished = false;
  int exit_code = -1;       // when exited normally
  int signal = 0;           // when killed by a signal
  bool killed_by_us = false;
  std::string describe() const;  // "rank 1 (pid 123) exited with status 1" / "was killed by SIGKILL"
};

struct LaunchResult {
  bool ok = false;
  std::vector<RankStatus> ranks;
  std::string failure;       // one line: what ended the run, naming the rank
  int failed_rank = -1;
  bool timed_out = false;
  bool interrupted = false;  // Ctrl-C / SIGTERM on the launcher
  Seconds wall = 0;
};

LaunchResult launch_local(const LaunchOptions& opts);

// Path of the running executable (/proc/self/exe resolved), to re-exec ourselves as a worker.
std::string self_executable();

}  // namespace gaccum::comm
