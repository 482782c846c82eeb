// What: the `gaccum-tune` entry point: registers subcommands, parses flags, runs the chosen one
//       and maps errors to exit codes (0 ok, 1 failed, 2 bad input, 87 out of memory, and a
//       failed rank's 86/87/88) with one-line messages.
// Why: libraries throw typed exceptions (core/error.hpp); only here do they become text.
#include <algorithm>
#include <c10/util/Exception.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "check/verdict.hpp"
#include "cli/command.hpp"
#include "core/error.hpp"
#include "core/text_lines.hpp"
#include "core/version.hpp"
#include "engine/rank_error.hpp"

namespace {

int error(const std::string& msg, int code) {
  std::fflush(stdout);
  std::cerr << "gaccum-tune: error: " << gaccum::first_line(msg) << "\n";
  return code;
}

// Output that could not be written (a full disk, `> /dev/full`, a closed pipe) is a failed run:
// exit 1 with the reason, never 0 with the answer lost.
int flush_stdout(int code) {
  std::cout.flush();
  const bool bad = !std::cout || std::fflush(stdout) != 0 || std::ferror(stdout);
  if (!bad) return code;
  const int err = errno;
  std::clearerr(stdout);
  std::cerr << "gaccum-tune: error: cannot write to standard output: " << std::strerror(err ? err : EIO) << "\n";
  return code == gaccum::cli::kExitOk ? gaccum::cli::kExitFailed : code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gaccum::cli;
  CLI::App app{"gaccum-tune: measure, model and tune micro_batch, accum_steps and world_size for data-parallel "
               "training",
               "gaccum-tune"};
  app.require_subcommand(1);
  app.set_version_flag("--version", GACCUM_VERSION_STRING);
  app.get_formatter()->column_width(34);
  app.option_defaults()->always_capture_default();

  Action action;
  for (AddCommand add : {add_version_command, add_workloads_command, add_predict_command, add_tune_command, add_validate_command, add_profile_command, add_check_command, add_cluster_command, add_devices_command, add_calibrate_command, add_worker_command}) add(app, action);

  // An unknown subcommand is named before any flag is read (`report --help` is not the main help).
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::vector<std::string> names;
    for (const auto* sub : app.get_subcommands({})) {
      known = known || sub->check_name(argv[1]);
      if (sub->get_name() != "_worker") names.push_back(sub->get_name());
    }
    if (!known)
      return error(fmt::format("unknown subcommand '{}': expected one of {} (see gaccum-tune --help)", argv[1],
                               fmt::join(names, ", ")),
                   kExitBadInput);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // No subcommand recognised: name what was typed and the subcommands there are.
    if (app.get_subcommands().empty() && argc > 1 && argv[1][0] != '-') {
      std::vector<std::string> names;
      for (const auto* s : app.get_subcommands({})) names.push_back(s->get_name());
      names.erase(std::remove(names.begin(), names.end(), "_worker"), names.end());
      return error(fmt::format("unknown subcommand '{}': expected one of {} (see gaccum-tune --help)", argv[1],
                               fmt::join(names, ", ")),
                   kExitBadInput);
    }
    std::string hint;
    bool check_json = false;
    for (const auto* sub : app.get_subcommands()) {
      hint = fmt::format(" (see gaccum-tune {} --help)", sub->get_name());
      if (sub->get_name() == "check")
        for (int i = 2; i < argc; ++i) check_json = check_json || std::string(argv[i]) == "--json";
    }
    if (hint.empty()) hint = " (see gaccum-tune --help)";
    std::string what = e.what();
    if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
      // CLI11 lists the unexpected arguments last-first; name them in the order they were typed.
      std::vector<std::string> extras = app.remaining();
      for (const auto* sub : app.get_subcommands())
        for (const auto& r : sub->remaining()) extras.push_back(r);
      if (!extras.empty())
        what = fmt::format("unexpected argument{}: {}", extras.size() > 1 ? "s" : "", fmt::join(extras, " "));
    }
    // `check --json` always answers with a verdict, also when the flags themselves are bad.
    if (check_json)
      std::fputs(gaccum::check::print_error_json(what + hint, kExitBadInput, GACCUM_VERSION_STRING)
                     .c_str(),
                 stdout);
    return error(what + hint, kExitBadInput);
  } catch (const gaccum::InputError& e) {
    return error(e.what(), kExitBadInput);
  }

  try {
    return flush_stdout(action ? action() : kExitBadInput);
  } catch (const gaccum::InputError& e) {
    return error(e.what(), kExitBadInput);
  } catch (const gaccum::RankFailure& e) {
    return error(e.what(), e.exit_code());
  } catch (const gaccum::OutOfMemoryError& e) {
    return error(e.what(), gaccum::engine::kExitOutOfMemory);
  } catch (const gaccum::Error& e) {
    return error(e.what(), kExitFailed);
  } catch (const c10::Error& e) {
    // One line: the last non-empty line of LibTorch's message is the error itself.
    const std::string line = gaccum::last_nonempty_line(e.what_without_backtrace());
    if (gaccum::is_out_of_memory_message(e.what_without_backtrace()))
      return error("out of host memory (LibTorch: " + line + "): lower --micro-batch / --micro-batches or use a "
                   "smaller model",
                   gaccum::engine::kExitOutOfMemory);
    return error("LibTorch: " + line, kExitFailed);
  } catch (const std::bad_alloc&) {
    return error("out of host memory (std::bad_alloc): the request needs more memory than this machine has; lower "
                 "--micro-batch / --micro-batches or use a smaller model",
                 gaccum::engine::kExitOutOfMemory);
  } catch (const std::exception& e) {
    if (gaccum::is_out_of_memory_message(e.what()))
      return error("out of host memory (" + gaccum::last_nonempty_line(e.what()) +
                       "): lower --micro-batch / --micro-batches or use a smaller model",
                   gaccum::engine::kExitOutOfMemory);
    return error(std::string("internal error: ") + e.what(), kExitFailed);
  }
}
