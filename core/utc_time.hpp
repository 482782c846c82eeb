// What: the current time as an ISO-8601 UTC string, e.g. "2026-11-29T23:37:43Z", and that
//       spelling read back (seconds since the epoch).
// Why: profile.json, validation.json, tune results and cluster descriptions stamp when they were
//      measured; one spelling everywhere, and `check` reads it back to tell a description's age.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gaccum {

std::string utc_now();
// "YYYY-MM-DDTHH:MM:SSZ" for seconds since the epoch.
std::string format_utc(std::int64_t epoch_seconds);
// Seconds since the epoch of "YYYY-MM-DDTHH:MM:SSZ" (also "YYYY-MM-DD", midnight); nullopt when
// the text is not that spelling or not a real date.
std::optional<std::int64_t> parse_utc(const std::string& text);
// Seconds since the epoch, now.
std::int64_t epoch_now();

}  // namespace gaccum
