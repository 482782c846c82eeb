// What/why: names of the strategies in strategy.hpp, one spelling everywhere.
#include "core/strategy.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum {

std::string_view to_string(Strategy s) {
  switch (s) {
    case Strategy::overlap: return "overlap";
    case Strategy::fused: return "fused";
    case Strategy::every_step: return "every-step";
  }
  return "?";
}

Strategy parse_strategy(std::string_view text, std::string_view field) {
  if (text == "overlap") return Strategy::overlap;
  if (text == "fused") return Strategy::fused;
  if (text == "every-step" || text == "every_step") return Strategy::every_step;
  throw InputError(fmt::format("{}: unknown strategy '{}': expected overlap, fused or every-step", field, text));
}

}  // namespace gaccum
