// What: parsers for the textual values users type in flags and job files.
//   sizes      "20GiB", "512M", "4K", "1048576"        -> Bytes   (K/M/G/T are binary, like nccl-tests)
//   fractions  "90%", "0.9"                            -> double in [0, 1]
//   size cap   "20GiB" or "90%"                        -> MemoryCap
//   lists      "1,2,4,8"                               -> vector<Count>
//   sweeps     "4K-256M*4" (geometric), "1-8+1"        -> vector<Bytes>
//   durations  "60s", "500ms", "2m", "1.5"             -> Seconds, at most kMaxSeconds (100 years:
//              every timeout becomes int64 milliseconds and a steady_clock deadline in int64
//              nanoseconds, which a larger value overflows)
//   ranges     "256-1024"                              -> {lo, hi}
// Why: one place decides what a valid value is; each failure is an InputError naming `field`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/units.hpp"

namespace gaccum {

Bytes parse_bytes(std::string_view text, std::string_view field);
double parse_fraction(std::string_view text, std::string_view field);
inline constexpr Seconds kMaxSeconds = 36525.0 * 86400.0;  // 100 years, 3.16e9 s
Seconds parse_seconds(std::string_view text, std::string_view field);
// A strictly positive integer that fits in int64 ("0", "-3", "2.5", "1e40" are errors).
Count parse_positive_count(std::string_view text, std::string_view field);
// 0 or a positive integer that fits in int64 (seeds, warm-up counts; "-1" is an error).
Count parse_count_or_zero(std::string_view text, std::string_view field);
std::vector<Count> parse_count_list(std::string_view text, std::string_view field);
std::pair<Count, Count> parse_count_range(std::string_view text, std::string_view field);
std::vector<Bytes> parse_size_sweep(std::string_view text, std::string_view field);

// A memory cap is either absolute or a fraction of the device's memory.
struct MemoryCap {
  std::optional<Bytes> absolute;
  std::optional<double> fraction;
  Bytes resolve(Bytes device_memory) const;
  std::string to_string() const;
};
MemoryCap parse_memory_cap(std::string_view text, std::string_view field);

// `s` as one POSIX shell word: as is when it holds only [A-Za-z0-9_./:=,@%+-], else single-quoted
// (a ' written '\''), so a printed command runs as printed.
std::string shell_word(const std::string& s);

}  // namespace gaccum
