// What/why: see rank_error.hpp.
#include "engine/rank_error.hpp"

#include <torch/torch.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>

#include <fmt/format.h>

#include "comm/launcher.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/text_lines.hpp"

namespace gaccum::engine {
namespace {

std::atomic<Count> g_step{-1}, g_micro{-1};
std::mutex g_phase_mu;
std::string g_phase;  // guarded by g_phase_mu (the watchdog's thread reads it)

}  // namespace

void RankPosition::set_phase(const std::string& phase) {
  std::lock_guard<std::mutex> lock(g_phase_mu);
  g_phase = phase;
}

void RankPosition::set(Count step, Count micro) {
  g_step = step;
  g_micro = micro;
}
void RankPosition::set_micro(Count micro) {
  g_micro = micro;
}
Count RankPosition::step() {
  return g_step.load();
}

std::string RankPosition::describe() {
  {
    std::lock_guard<std::mutex> lock(g_phase_mu);
    if (!g_phase.empty()) return "in " + g_phase;
  }
  if (g_step.load() < 0) {
    const char* addr = std::getenv("MASTER_ADDR");
    const char* port = std::getenv("MASTER_PORT");
    return fmt::format(
        "before step 0 (connecting through MASTER_ADDR={} MASTER_PORT={}: is the address right and the "
        "port free, and was every rank started?)",
        addr && *addr ? addr : "<unset>", port && *port ? port : "<unset>");
  }
  return fmt::format("in step {} micro-step {}", g_step.load(), g_micro.load());
}

void report_rank_error(int rank, const std::string& msg) {
  const std::string line = fmt::format("rank {}: {}", rank, msg);
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  if (const char* path = std::getenv("GACCUM_ERROR_FILE"); path && *path) {
    try {
      write_file_atomic(path, line + "\n");
    } catch (const std::exception&) {
    }
  }
}

int rank_failure_exit_code(int rank, std::exception_ptr e) {
  const std::string where = RankPosition::describe();
  try {
    std::rethrow_exception(e);
  } catch (const std::bad_alloc&) {
    report_rank_error(rank, fmt::format("out of memory {}: lower --micro-batch", where));
    return kExitOutOfMemory;
  } catch (const c10::OutOfMemoryError& ex) {
    report_rank_error(rank,
                      fmt::format("out of memory {}: {}: lower --micro-batch", where, ex.what_without_backtrace()));
    return kExitOutOfMemory;
  } catch (const InputError& ex) {
    report_rank_error(rank, ex.what());
    return 2;
  } catch (const CollectiveFailure& ex) {  // from the c10d seam: a peer was lost
    report_rank_error(rank, fmt::format("{} {}", ex.what(), where));
    return comm::kExitPeerLost;
  } catch (const OutOfMemoryError& ex) {
    report_rank_error(rank, fmt::format("{} {}", ex.what(), where));
    return kExitOutOfMemory;
  } catch (const RuntimeFailure& ex) {
    report_rank_error(rank, fmt::format("{} {}", ex.what(), where));
    return 1;
  } catch (const c10::Error& ex) {
    std::string what = ex.what_without_backtrace();
    if (is_out_of_memory_message(what)) {  // e.g. a TorchScript forward's allocation, rethrown as text
      report_rank_error(rank, fmt::format("out of memory {}: {}: lower --micro-batch", where,
                                          last_nonempty_line(what)));
      return kExitOutOfMemory;
    }
    what = what.substr(0, what.find('\n'));
    report_rank_error(rank, fmt::format("LibTorch: {} {}", what, where));
    return 1;
  } catch (const std::exception& ex) {
    if (is_out_of_memory_message(ex.what())) {
      report_rank_error(rank, fmt::format("out of memory {}: {}: lower --micro-batch", where,
                                          last_nonempty_line(ex.what())));
      return kExitOutOfMemory;
    }
    report_rank_error(rank, fmt::format("internal error: {} {}", ex.what(), where));
    return 1;
  }
}

}  // namespace gaccum::engine
