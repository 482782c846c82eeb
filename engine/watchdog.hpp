// What: a thread that ends its rank process with kExitHung (engine/rank_error.hpp) when the
//       rank makes no progress (no beat()) for `limit` seconds, after reporting where the rank
//       was (RankPosition) through the rank's error channel.
// Why: a hang in compute, or a wait no collective timeout covers, must end the job within a
//      bounded time with the hung rank named. Callers set the collectives' timeout below the
//      limit, so a rank blocked on a hung peer reports a failed collective first and the hung
//      rank names itself.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/units.hpp"

namespace gaccum::engine {

class Watchdog {
 public:
  Watchdog(int rank, Seconds limit);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  void beat();

 private:
  void loop();
  int rank_;
  Seconds limit_;
  std::atomic<std::chrono::steady_clock::rep> last_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gaccum::engine
