// What/why: see progress.hpp.
#include "profiler/progress.hpp"

#include <cstdio>

namespace gaccum::profiler {

Progress::Progress(bool enabled) : enabled_(enabled), start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { clear(); }

void Progress::status(const std::string& line) {
  if (!enabled_) return;
  std::fprintf(stderr, "\r\033[K[%5.1fs] %s", elapsed(), line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::clear() {
  if (!enabled_ || !drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

Seconds Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

}  // namespace gaccum::profiler
