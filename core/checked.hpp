// What: checked integer arithmetic for counts and byte sizes (b*k*p, bytes x count), and the
//       limits every subcommand states in --help for micro_batch, accum_steps, world_size and
//       the global batch.
// Why: a product that wraps around int64 gave wrong answers with exit 0 (global_batch 0, a
//      negative number of allreduces) and killed ranks with SIGFPE; every such value now stops
//      at the flag with one line that names it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/units.hpp"

namespace gaccum {

// The largest micro_batch, accum_steps, world_size and global batch b*k*p accepted (2^40, about
// 1.1e12): far above any real job, small enough that a product of a count with a per-sample
// size below 2^24 bytes, and b*k*p itself, stay exact in int64 and in a double.
inline constexpr Count kMaxCount = Count(1) << 40;
inline constexpr const char* kMaxCountText = "2^40 = 1099511627776";

// nullopt when the exact result does not fit.
std::optional<Count> checked_mul(Count a, Count b);
std::optional<Count> checked_add(Count a, Count b);
std::optional<Bytes> checked_mul(Bytes a, Bytes b);
std::optional<Bytes> checked_add(Bytes a, Bytes b);

// A positive integer at most `max`: InputError "<field>: N is above the largest accepted M" when
// larger (and parse_positive_count's errors otherwise).
Count parse_count_at_most(std::string_view text, std::string_view field, Count max = kMaxCount,
                          std::string_view max_text = kMaxCountText);

// b*k*p, each already at most kMaxCount; InputError naming the three flags when the product is
// above kMaxCount. `flags` names them in messages, e.g. "--micro-batch x --accum-steps x --world-size".
Count checked_global_batch(Count micro_batch, Count accum_steps, Count world_size, std::string_view flags);

}  // namespace gaccum
