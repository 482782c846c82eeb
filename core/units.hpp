// What: the unit types every stage speaks (bytes, seconds, samples) and their printers.
// Why: a cost model mixes bytes, seconds and bandwidths; naming the unit in the type makes a
//      wrong mix visible in review (astra-network-analytical style).
#pragma once

#include <cstdint>
#include <string>

namespace gaccum {

using Bytes = std::uint64_t;       // memory or message sizes, exact
using Seconds = double;            // wall-clock durations
using BytesPerSecond = double;     // bandwidths (algbw, busbw, link bandwidth)
using SamplesPerSecond = double;   // throughput
using Count = std::int64_t;        // micro_batch, accum_steps, world_size, global_batch

inline constexpr Bytes KiB = 1024;
inline constexpr Bytes MiB = 1024 * KiB;
inline constexpr Bytes GiB = 1024 * MiB;

// "1.50 GiB", "512 B": binary prefixes, 3 significant digits.
std::string format_bytes(Bytes b);
// "12.3 ms", "1.20 s", "850 us".
std::string format_seconds(Seconds s);
// A rate per second (samples/s): "254.4", "4.8"; below 0.05, where one decimal would print 0.0,
// 3 significant digits ("0.0164").
std::string format_rate(double per_s);
}  // namespace gaccum
