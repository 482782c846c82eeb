// What: a stable 64-bit FNV-1a content hash printed as 16 hex digits.
// Why: workload identity and profile cache keys must be the same on every machine and build
//      (std::hash is not), and collisions only need to be unlikely, not adversarially hard.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gaccum {

constexpr std::uint64_t fnv1a64(std::string_view data, std::uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hex64(std::uint64_t v);

}  // namespace gaccum
