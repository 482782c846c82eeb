// What/why: names and parsers of the optimizers in optimizer.hpp, read from its traits table.
#include "core/optimizer.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace gaccum {

namespace {

// "sgd, adam, adamw or lamb": the table's names in order, `libtorch_only` keeps those LibTorch has.
std::string choices(bool libtorch_only) {
  std::string out;
  std::size_t n = 0, total = 0;
  for (const auto& t : kOptimizerTraits)
    if (!libtorch_only || t.in_libtorch) ++total;
  for (const auto& t : kOptimizerTraits) {
    if (libtorch_only && !t.in_libtorch) continue;
    if (n > 0) out += n + 1 == total ? " or " : ", ";
    out += t.name;
    ++n;
  }
  return out;
}

}  // namespace

std::string_view to_string(Optimizer o) {
  return traits(o).name;
}

std::string_view to_string(LrRule r) {
  return r == LrRule::linear ? "linear" : "square-root";
}

std::optional<Optimizer> find_optimizer(std::string_view text) {
  for (const auto& t : kOptimizerTraits)
    if (t.name == text) return t.optimizer;
  return std::nullopt;
}

Optimizer parse_optimizer(std::string_view text, std::string_view flag) {
  if (const auto o = find_optimizer(text)) return *o;
  throw InputError(fmt::format("{}: unknown optimizer '{}': expected {}", flag, text, choices(false)));
}

Optimizer parse_libtorch_optimizer(std::string_view text, std::string_view flag) {
  if (const auto o = find_optimizer(text); o && traits(*o).in_libtorch) return *o;
  throw InputError(fmt::format("{}: unknown optimizer '{}': expected {}", flag, text, choices(true)));
}

void to_json(nlohmann::json& j, Optimizer o) {
  j = std::string(to_string(o));
}

}  // namespace gaccum
