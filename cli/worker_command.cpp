// What: the hidden `gaccum-tune _worker --role NAME --args FILE` entry point that rank
//       processes run: the launcher (comm/launcher) re-executes this binary once per rank, and
//       each rank finds its rank/world_size in the environment (comm/rank_env).
// Why: one binary is easier to ship to a cluster than a tool plus helper executables, and the
//      same entry point works under torchrun/Slurm/mpirun.
// Roles are registered in kRoles below by the libraries that own them; each role reads its JSON
// arguments and returns an exit code (comm::kExitPeerLost when a collective failed).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "profiler/rank_worker.hpp"
#include "runner/rank_run.hpp"

namespace gaccum::cli {
namespace {

using RoleFn = int (*)(const nlohmann::json& args);
struct Role {
  const char* name;
  RoleFn run;
};

// Registered roles (add one line per role).
const Role kRoles[] = {
    {runner::kValidateRankRole, runner::validate_rank_role},
    {profiler::kProfileRankRole, &profiler::run_profile_rank},
    {nullptr, nullptr},
};

struct WorkerOptions {
  std::string role;
  std::string args_file;
};

int run_worker(const WorkerOptions& o) {
  for (const auto& r : kRoles) {
    if (r.name && o.role == r.name) {
      auto args = parse_json_text(read_file(o.args_file, "--args"), o.args_file);
      return r.run(args);
    }
  }
  throw InputError(fmt::format("--role: unknown worker role '{}'", o.role));
}

}  // namespace

void add_worker_command(CLI::App& app, Action& action) {
  bool any = false;
  for (const auto& r : kRoles) any = any || r.name != nullptr;
  if (!any) return;
  auto o = std::make_shared<WorkerOptions>();
  auto* sub = app.add_subcommand("_worker", "Internal: run one rank of a distributed job");
  sub->group("");  // hidden from --help
  sub->add_option("--role", o->role, "Worker role")->required();
  sub->add_option("--args", o->args_file, "JSON arguments file")->required();
  sub->callback([o, &action] { action = [o] { return run_worker(*o); }; });
}

}  // namespace gaccum::cli
