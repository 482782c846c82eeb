// What: the body of `gaccum-tune _worker --role profile-rank --args FILE`: one rank process of
//       a profiling rank group, started by the parent as an engine::RankJob.
//   1. stdout/stderr go to <job_dir>/rank<r>.log (failures are reported through the rank's error
//      channel, engine/rank_error.hpp, which the parent quotes);
//   2. torch::set_num_threads(threads_per_rank) and set_num_interop_threads(1) (contract: the
//      runner uses the same values; recorded in hardware.threads_per_rank);
//   3. the CPU tracking allocator is installed (as in the runner's ranks), the workload built on
//      cpu or cuda:<local rank>, gradients allocated, the optimizer created;
//   4. world_size >= 2: connect (Gloo on CPU, NCCL on CUDA) through the launcher's store;
//   5. the probes run (probe.hpp) and the results are written atomically to
//      <job_dir>/rank<r>.json (engine::rank_result_path): {"rank", "world_size", "pid", "threads", "fragment": a partial
//      profile.json holding compute/optimizer/allreduce/overlap, "local": this rank's medians}.
// Exit codes: 0 ok, otherwise engine::rank_failure_exit_code (comm::kExitPeerLost when a collective
// failed, engine::kExitOutOfMemory, 2 bad input, 1 otherwise).
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "profiler/probe.hpp"

namespace gaccum::profiler {

inline constexpr const char* kProfileRankRole = "profile-rank";

int run_profile_rank(const nlohmann::json& args);

// The body of one profile rank: threads, the CPU tracking allocator, the workload on cpu or
// cuda:<local rank>, then the probes over `comm` (null at world_size 1; otherwise connected by
// the caller), then `after` (e.g. the per-level collective sweeps of a launched profile) with the
// same session. Shared by the local rank groups and `profile` under a cluster launcher.
struct RankMeasurement {
  RankResults results;
  WorkloadIdentity identity;
  int threads = 0;
};
using AfterProbes = std::function<void(RankSession&, RankResults&)>;
RankMeasurement measure_rank(const RankPlan& plan, const comm::RankContext& ctx, comm::Communicator* comm,
                             const AfterProbes& after = nullptr);

// What the parent reads back from rank<r>.json.
struct RankFile {
  int rank = 0;
  int world_size = 0;
  int threads = 0;
  long pid = 0;
  std::string workload_hash;
  RankResults results;
};
RankFile read_rank_file(const std::string& path);
std::string rank_log_path(const std::string& job_dir, int rank);

}  // namespace gaccum::profiler
