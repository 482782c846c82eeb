// What: one status line on stderr ("[ 12.3s] compute, 2 ranks ..."), redrawn in place, only
//       when stderr is a terminal; silent otherwise (logs and pipes get only the summary).
// Why: a profile takes tens of seconds; a user at a terminal should see it moving, while CI
//      logs and `2>file` stay clean.
#pragma once

#include <chrono>
#include <string>

#include "core/units.hpp"

namespace gaccum::profiler {

class Progress {
 public:
  // enabled: draw at all (the CLI passes isatty(stderr)).
  explicit Progress(bool enabled);
  ~Progress();
  void status(const std::string& line);
  // Clears the status line (before printing the summary or an error).
  void clear();
  Seconds elapsed() const;

 private:
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace gaccum::profiler
