// What: how subcommands plug into the `gaccum-tune` binary. Each subcommand lives in one file
//       with its options struct and defaults, and exposes one add_* function listed in main.cpp
//       (CLI11 examples/subcom_in_files style).
// Why: the only place that turns typed exceptions into messages and exit codes is main.cpp;
//      subcommands just return 0 (success) or 1 (a check or run that failed).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace gaccum::cli {

using Action = std::function<int()>;

// Registers a subcommand on `app`; when it is the one parsed, `action` is set to its body.
using AddCommand = void (*)(CLI::App& app, Action& action);

void add_version_command(CLI::App& app, Action& action);
void add_workloads_command(CLI::App& app, Action& action);
void add_predict_command(CLI::App& app, Action& action);
void add_tune_command(CLI::App& app, Action& action);
void add_validate_command(CLI::App& app, Action& action);
void add_worker_command(CLI::App& app, Action& action);  // hidden; rank processes
void add_profile_command(CLI::App& app, Action& action);
void add_check_command(CLI::App& app, Action& action);
void add_cluster_command(CLI::App& app, Action& action);
void add_devices_command(CLI::App& app, Action& action);
void add_calibrate_command(CLI::App& app, Action& action);

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;    // a check failed, a run failed
inline constexpr int kExitBadInput = 2;  // bad flags, files or fields
// validate and profile (a launched rank failed; gaccum::RankFailure carries them,
// docs/exit-codes.md): 86 a rank died, 87 a rank ran out of memory, 88 a rank hung (comm/launcher.hpp,
// engine/rank_error.hpp); a rank's own exit 2 (bad input) is returned as 2. This process out of
// memory is 87 too (gaccum::OutOfMemoryError, std::bad_alloc; cli/main.cpp), and profile's own
// watchdog (engine/watchdog.hpp) ends the process with 88 itself.

}  // namespace gaccum::cli
