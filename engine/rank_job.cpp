// What/why: see rank_job.hpp.
#include "engine/rank_job.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/scratch_dir.hpp"
#include "engine/rank_error.hpp"

namespace gaccum::engine {
namespace {

namespace fs = std::filesystem;

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

fs::path error_path(const fs::path& dir, int rank) {
  return dir / fmt::format("rank{}.err", rank);
}

// One line: what ended the launch, naming the rank, plus what that rank said about it.
std::string describe_failure(const comm::LaunchResult& res, const fs::path& dir, int world) {
  std::string msg = res.failure;
  std::string said;
  if (res.failed_rank >= 0) said = trim(read_file_if_present(error_path(dir, res.failed_rank)));
  // Else the first rank that said why it stopped, other than those that only lost a peer (exit
  // comm::kExitPeerLost, a CollectiveFailure: rank_failure_exit_code).
  if (said.empty())
    for (int r = 0; r < world && said.empty(); ++r) {
      const auto i = static_cast<std::size_t>(r);
      if (i < res.ranks.size() && res.ranks[i].finished && res.ranks[i].signal == 0 &&
          res.ranks[i].exit_code == comm::kExitPeerLost)
        continue;
      said = trim(read_file_if_present(error_path(dir, r)));
    }
  if (!said.empty()) msg += " -- " + said.substr(0, said.find('\n'));
  return msg;
}

}  // namespace

std::string rank_result_path(const std::string& job_dir, int rank) {
  return (fs::path(job_dir) / fmt::format("rank{}.json", rank)).string();
}

int launch_exit_code(const comm::LaunchResult& res) {
  if (res.ok) return 0;
  if (res.interrupted) return 1;
  if (res.timed_out) return kExitHung;
  if (res.failed_rank < 0 || res.failed_rank >= static_cast<int>(res.ranks.size())) return comm::kExitPeerLost;
  const comm::RankStatus& st = res.ranks[static_cast<std::size_t>(res.failed_rank)];
  if (!st.finished || st.killed_by_us) return kExitHung;
  if (st.signal != 0) return comm::kExitPeerLost;
  if (st.exit_code == 2 || st.exit_code == kExitOutOfMemory || st.exit_code == kExitHung) return st.exit_code;
  return comm::kExitPeerLost;
}

RankJobOutcome run_rank_job(const RankJob& job,
                            const std::function<void(const std::string& dir, const RankJobOutcome&)>& read_back) {
  ScratchDir scratch(job.scratch_prefix);
  const fs::path dir = scratch.path();
  const fs::path args_file = dir / "args.json";
  nlohmann::json args = job.args;
  args["job_dir"] = dir.string();
  write_file_atomic(args_file, args.dump(1) + "\n");

  comm::LaunchOptions lo;
  lo.argv = {job.executable.empty() ? comm::self_executable() : job.executable,
             "_worker",
             "--role",
             job.role,
             "--args",
             args_file.string()};
  lo.world_size = job.world_size;
  lo.deadline = job.deadline;
  lo.store_timeout = job.store_timeout;
  lo.grace = job.grace;
  lo.env = job.env;
  for (int r = 0; r < job.world_size; ++r) lo.rank_env[r]["GACCUM_ERROR_FILE"] = error_path(dir, r).string();

  RankJobOutcome out;
  out.launch = comm::launch_local(lo);
  out.ok = out.launch.ok;
  out.exit_code = launch_exit_code(out.launch);
  if (!out.ok) out.failure = describe_failure(out.launch, dir, job.world_size);
  if (read_back) read_back(dir.string(), out);
  return out;
}

}  // namespace gaccum::engine
