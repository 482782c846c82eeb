// What/why: see watchdog.hpp.
#include "engine/watchdog.hpp"

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "engine/rank_error.hpp"

namespace gaccum::engine {

using Clock = std::chrono::steady_clock;

namespace {

std::atomic<Watchdog*> g_active{nullptr};

}  // namespace

Watchdog::Watchdog(int rank, Seconds limit) : rank_(rank), limit_(limit) {
  beat();
  previous_ = g_active.exchange(this);
  thread_ = std::thread([this] { loop(); });
}

Watchdog::Watchdog(std::string who, Seconds limit, std::string hint)
    : who_(std::move(who)), hint_(std::move(hint)), limit_(limit) {
  beat();
  previous_ = g_active.exchange(this);
  thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  Watchdog* self = this;
  g_active.compare_exchange_strong(self, previous_);
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

void Watchdog::beat_active() {
  if (Watchdog* w = g_active.load()) w->beat();
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (stop_) break;
    const auto last = Clock::time_point(Clock::duration(last_.load()));
    const double idle = std::chrono::duration<double>(Clock::now() - last).count();
    if (idle > limit_) {
      if (rank_ >= 0) {
        report_rank_error(rank_, fmt::format("no progress for {} {} (hung?); stopping this rank", format_seconds(idle),
                                             RankPosition::describe()));
      } else {
        std::fprintf(stderr, "gaccum-tune: error: %s\n",
                     fmt::format("{}: no progress for {} {} (hung?); stopped{}", who_, format_seconds(idle),
                                 RankPosition::describe(), hint_.empty() ? "" : ": " + hint_)
                         .c_str());
        std::fflush(stderr);
      }
      std::_Exit(kExitHung);
    }
  }
}

}  // namespace gaccum::engine
