// What/why: names of the strategies in strategy.hpp, one spelling everywhere.
#include "core/strategy.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum {

std::string_view to_string(Strategy s) { return traits(s).name; }

Strategy parse_strategy(std::string_view text, std::string_view field) {
  for (const auto& t : kStrategyTraits)
    if (text == t.name) return t.value;
  if (text == "every_step") return Strategy::every_step;
  throw InputError(fmt::format("{}: unknown strategy '{}': expected overlap, fused or every-step", field, text));
}

}  // namespace gaccum
