// What/why: see watchdog.hpp.
#include "engine/watchdog.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "engine/rank_error.hpp"

namespace gaccum::engine {

using Clock = std::chrono::steady_clock;

Watchdog::Watchdog(int rank, Seconds limit) : rank_(rank), limit_(limit) {
  beat();
  thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::beat() {
  last_.store(Clock::now().time_since_epoch().count());
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (stop_) break;
    const auto last = Clock::time_point(Clock::duration(last_.load()));
    const double idle = std::chrono::duration<double>(Clock::now() - last).count();
    if (idle > limit_) {
      report_rank_error(rank_, fmt::format("no progress for {} {} (hung?); stopping this rank", format_seconds(idle),
                                           RankPosition::describe()));
      std::_Exit(kExitHung);
    }
  }
}

}  // namespace gaccum::engine
