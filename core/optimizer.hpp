// What: the optimizers a plan is trained with (docs/DESIGN.md, Vocabulary) and their one traits
//       table: name, fp32 state slots per parameter, the learning-rate scaling rule, the
//       element-wise passes of one step, and whether LibTorch 1.13 has it (LAMB does not; it is
//       profiled and run as Adam, which has the same two state slots).
// Why: every stage (profiler, runner, model, tuner, check, CLI) reads these facts from one place;
//      names are parsed at the boundary (flags, JSON) and spelt by to_string, so files keep the
//      same strings.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace gaccum {

enum class Optimizer { sgd, adam, adamw, lamb };

// Learning-rate scaling with the global batch (tuner/lr_advice.hpp has the formulas and sources).
enum class LrRule { linear, square_root };

struct OptimizerTraits {
  Optimizer optimizer;
  std::string_view name;  // the spelling in flags, JSON, CSV and reports
  int state_slots;        // fp32 state elements per parameter: SGD momentum 1, Adam-type moments 2
  LrRule lr_rule;         // sgd linear; adam, adamw, lamb square-root
  // Element-wise passes over parameter-sized tensors of one step, zero_grad included, LibTorch
  // 1.13 C++ optimizers (the counts are explained in model/strategy_cost.hpp); lamb: adam's.
  int step_passes;
  bool in_libtorch;       // torch::optim has it (workloads/optimizer.hpp builds it)
  Optimizer profiled_as;  // the LibTorch optimizer whose state and step are measured for it
};

inline constexpr std::array<OptimizerTraits, 4> kOptimizerTraits{{
    {Optimizer::sgd, "sgd", 1, LrRule::linear, 9, true, Optimizer::sgd},
    {Optimizer::adam, "adam", 2, LrRule::square_root, 21, true, Optimizer::adam},
    {Optimizer::adamw, "adamw", 2, LrRule::square_root, 23, true, Optimizer::adamw},
    {Optimizer::lamb, "lamb", 2, LrRule::square_root, 21, false, Optimizer::adam},
}};

constexpr const OptimizerTraits& traits(Optimizer o) {
  return kOptimizerTraits[static_cast<std::size_t>(o)];
}

// "sgd", "adam", "adamw", "lamb".
std::string_view to_string(Optimizer o);
// "linear", "square-root".
std::string_view to_string(LrRule r);
// The optimizer spelt exactly `text`, nullopt otherwise (e.g. a DeepSpeed type without a rule).
std::optional<Optimizer> find_optimizer(std::string_view text);
// Any optimizer of the table; InputError naming `flag` and listing the choices otherwise.
Optimizer parse_optimizer(std::string_view text, std::string_view flag = "--optimizer");
// An optimizer LibTorch has (profile, validate, the runner); InputError naming `flag` and listing
// those choices otherwise.
Optimizer parse_libtorch_optimizer(std::string_view text, std::string_view flag = "--optimizer");
// A JSON field holding an Optimizer is its name (never the enum's integer); reading goes through
// parse_optimizer / parse_libtorch_optimizer so the error names the field.
void to_json(nlohmann::json& j, Optimizer o);

}  // namespace gaccum
