// What/why: see faults.hpp.
#include "runner/faults.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <new>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/parse.hpp"

namespace gaccum::runner {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    auto n = s.find(sep, pos);
    out.push_back(s.substr(pos, n == std::string::npos ? std::string::npos : n - pos));
    if (n == std::string::npos) break;
    pos = n + 1;
  }
  return out;
}

int rank_of(const std::vector<std::string>& parts, const char* var) {
  if (parts.size() < 3 || parts[0] != "rank")
    throw InputError(fmt::format("environment: {} must look like rank:R:WHAT", var));
  return parts[1] == "0" ? 0 : static_cast<int>(parse_positive_count(parts[1], var));
}

}  // namespace

Faults Faults::from_env(int rank) {
  Faults f;
  if (const char* v = std::getenv("GACCUM_TEST_FAULT"); v && *v) {
    auto parts = split(v, ':');
    if (rank_of(parts, "GACCUM_TEST_FAULT") == rank) {
      f.kind = parts[2];
      if (f.kind != "exit" && f.kind != "abort" && f.kind != "sigkill" && f.kind != "hang" && f.kind != "oom" &&
          f.kind != "nojoin" && f.kind != "dropsend")
        throw InputError(fmt::format("environment: GACCUM_TEST_FAULT: unknown fault '{}'", f.kind));
      if (parts.size() > 3) f.step = parts[3] == "0" ? 0 : parse_positive_count(parts[3], "GACCUM_TEST_FAULT step");
      if (parts.size() > 4) f.micro = parts[4] == "0" ? 0 : parse_positive_count(parts[4], "GACCUM_TEST_FAULT micro");
    }
  }
  if (const char* v = std::getenv("GACCUM_TEST_PERTURB"); v && *v) {
    auto parts = split(v, ':');
    if (rank_of(parts, "GACCUM_TEST_PERTURB") == rank) {
      if (parts[2] == "seed")
        f.perturb_seed = true;
      else if (parts[2] == "schedule")
        f.other_schedule = true;
      else
        throw InputError("environment: GACCUM_TEST_PERTURB: only 'seed' or 'schedule' can be perturbed");
    }
  }
  if (const char* v = std::getenv("GACCUM_TEST_BREAK"); v && *v) {
    const std::string b = v;
    if (b == "skip-zero-grad") {
      f.skip_zero_grad = true;
    } else if (b == "normalise-by-k") {
      f.normalise_by_k = true;
    } else if (b == "shard-overwrite") {
      f.shard = comm::ShardFault::overwrite;
    } else if (b == "skip-partial-sum") {
      f.skip_partial_sum = true;
    } else if (b == "swap-forwards") {
      f.swap_forwards = true;
    } else if (b == "shard-local") {
      f.shard = comm::ShardFault::local;
    } else {
      auto parts = split(b, ':');
      if (parts.size() != 3 || parts[2] != "param")
        throw InputError(fmt::format("environment: GACCUM_TEST_BREAK: unknown value '{}'", b));
      f.perturb_param = rank_of(parts, "GACCUM_TEST_BREAK") == rank;
    }
  }
  return f;
}

bool Faults::drops_send(Count step, Count micro) const {
  return kind == "dropsend" && step == this->step && micro == this->micro;
}

void Faults::maybe_trigger(Count step, Count micro) const {
  if (kind.empty() || kind == "nojoin" || kind == "dropsend" || step != this->step || micro != this->micro) return;
  if (kind == "exit") std::_Exit(1);
  if (kind == "abort") std::abort();
  if (kind == "sigkill") ::kill(::getpid(), SIGKILL);
  if (kind == "hang")
    while (true) std::this_thread::sleep_for(std::chrono::hours(1));
  if (kind == "oom") throw std::bad_alloc();
}

}  // namespace gaccum::runner
