// What/why: see checked.hpp.
#include "core/checked.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/parse.hpp"

namespace gaccum {

std::optional<Count> checked_mul(Count a, Count b) {
  Count r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<Count> checked_add(Count a, Count b) {
  Count r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<Bytes> checked_mul(Bytes a, Bytes b) {
  Bytes r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<Bytes> checked_add(Bytes a, Bytes b) {
  Bytes r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

Count parse_count_at_most(std::string_view text, std::string_view field, Count max, std::string_view max_text) {
  const Count v = parse_positive_count(text, field);
  if (v > max) throw InputError(fmt::format("{}: {} is above the largest accepted value {}", field, v, max_text));
  return v;
}

Count checked_global_batch(Count micro_batch, Count accum_steps, Count world_size, std::string_view flags) {
  auto bk = checked_mul(micro_batch, accum_steps);
  auto bkp = bk ? checked_mul(*bk, world_size) : std::nullopt;
  if (!bkp || *bkp > kMaxCount)
    throw InputError(fmt::format("{}: global batch {} x {} x {} is above the largest accepted {}", flags, micro_batch,
                                 accum_steps, world_size, kMaxCountText));
  return *bkp;
}

}  // namespace gaccum
