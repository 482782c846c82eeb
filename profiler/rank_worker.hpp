// What: the body of `gaccum-tune _worker --role profile-rank --args FILE`: one rank process of
//       a profiling rank group, started by the parent with comm::launch_local.
//   1. stdout/stderr go to <result_dir>/rank<r>.log (the parent quotes its last line on failure);
//   2. torch::set_num_threads(threads_per_rank) and set_num_interop_threads(1) (contract: the
//      runner uses the same values; recorded in hardware.threads_per_rank);
//   3. the CPU tracking allocator is installed (as in the runner's ranks), the workload built on
//      cpu or cuda:<local rank>, gradients allocated, the optimizer created;
//   4. world_size >= 2: connect (Gloo on CPU, NCCL on CUDA) through the launcher's store;
//   5. the probes run (probe.hpp) and the results are written atomically to
//      <result_dir>/rank<r>.json: {"rank", "world_size", "pid", "threads", "fragment": a partial
//      profile.json holding compute/optimizer/allreduce/overlap, "local": this rank's medians}.
// Exit codes: 0 ok; comm::kExitPeerLost when a collective failed (a peer died); errors
// otherwise propagate to main.cpp (exit 1/2).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "profiler/probe.hpp"

namespace gaccum::profiler {

inline constexpr const char* kProfileRankRole = "profile-rank";

int run_profile_rank(const nlohmann::json& args);

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
std::string rank_file_path(const std::string& result_dir, int rank);
std::string rank_log_path(const std::string& result_dir, int rank);

}  // namespace gaccum::profiler
