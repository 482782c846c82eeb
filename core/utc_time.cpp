// What/why: see utc_time.hpp.
#include "core/utc_time.hpp"

#include <cstdio>
#include <ctime>

namespace gaccum {

std::string format_utc(std::int64_t epoch_seconds) {
  const std::time_t t = static_cast<std::time_t>(epoch_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string utc_now() { return format_utc(epoch_now()); }

std::int64_t epoch_now() { return static_cast<std::int64_t>(std::time(nullptr)); }

std::optional<std::int64_t> parse_utc(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  char tail = 0;
  int n = 0;
  if (text.size() == 10) {
    if (std::sscanf(text.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10) return std::nullopt;
  } else if (text.size() == 20) {
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c%n", &y, &mo, &d, &h, &mi, &s, &tail, &n) != 7 || n != 20 ||
        tail != 'Z')
      return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  const std::time_t t = timegm(&tm);
  std::tm back{};
  gmtime_r(&t, &back);
  if (back.tm_mday != d || back.tm_mon != mo - 1) return std::nullopt;  // 2026-02-31
  return static_cast<std::int64_t>(t);
}

}  // namespace gaccum
