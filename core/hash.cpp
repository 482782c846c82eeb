// What/why: see hash.hpp.
#include "core/hash.hpp"

#include <fmt/format.h>

namespace gaccum {

std::string hex64(std::uint64_t v) { return fmt::format("{:016x}", v); }

}  // namespace gaccum
