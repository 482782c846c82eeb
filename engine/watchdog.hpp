// What: a thread that ends its process with kExitHung (engine/rank_error.hpp) when it makes no
//       progress (no beat()) for `limit` seconds, after saying where it was (RankPosition):
//         a rank's watchdog      "rank R: no progress for T <where> (hung?); stopping this rank"
//                                through the rank's error channel (report_rank_error);
//         a process's own        "gaccum-tune: error: <who>: no progress for T <where> (hung?) ..."
//                                on stderr (the profile's in-process phases: memory sweep,
//                                gradient norms), so the command ends with exit 88 too.
//       beat_active() beats the newest watchdog alive in this process: loops that do not know
//       which watchdog guards them (engine::IterationDriver's iterations, the memory sweep) call it.
// Why: a hang in compute (a model whose forward does not return), or a wait no collective
//      timeout covers, must end the job within a bounded time with the hung rank named. Callers
//      set the collectives' timeout below the limit, so a rank blocked on a hung peer reports a
//      failed collective first and the hung rank names itself.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "core/units.hpp"

namespace gaccum::engine {

class Watchdog {
 public:
  // A rank's watchdog.
  Watchdog(int rank, Seconds limit);
  // This process's own watchdog (not a rank): `who` names the command ("profile"), `hint` ends
  // the line (what to do).
  Watchdog(std::string who, Seconds limit, std::string hint);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  void beat();
  static void beat_active();

 private:
  void loop();
  int rank_ = -1;
  std::string who_, hint_;
  Seconds limit_;
  Watchdog* previous_ = nullptr;  // the watchdog active before this one
  std::atomic<std::chrono::steady_clock::rep> last_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gaccum::engine
