// What/why: human printers for the unit types in units.hpp (terminal tables and reports).
#include "core/units.hpp"

#include <cmath>

#include <fmt/format.h>

namespace gaccum {

std::string format_bytes(Bytes b) {
  static const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(b);
  int i = 0;
  while (v >= 1024.0 && i < 5) {
    v /= 1024.0;
    ++i;
  }
  if (i == 0) return fmt::format("{} B", b);
  return fmt::format("{:.{}f} {}", v, v < 10 ? 2 : (v < 100 ? 1 : 0), names[i]);
}

std::string format_rate(double per_s) {
  if (per_s > 0 && per_s < 0.05) return fmt::format("{:.3g}", per_s);
  return fmt::format("{:.1f}", per_s);
}

std::string format_seconds(Seconds s) {
  // Below a nanosecond is rounding residue of a difference of sums, not a time: print 0.
  if (std::fabs(s) < 1e-9) s = 0;
  double a = std::fabs(s);
  if (a >= 1.0) return fmt::format("{:.3g} s", s);
  if (a >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} us", s * 1e6);
}

}  // namespace gaccum
