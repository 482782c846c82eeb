// What: the gradient-synchronisation strategies (docs/DESIGN.md, Cost model) and their names.
//   overlap    DDP + no_sync() on the first k-1 micro-steps; bucketed allreduce overlapped with
//              the last backward.
//   fused      Horovod backward_passes_per_step=k: local accumulation, one fused allreduce after
//              the last backward, nothing overlapped.
//   every_step DDP without no_sync(): bucketed allreduce on every micro-step (the common mistake).
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace gaccum {

enum class Strategy { overlap, fused, every_step };

inline constexpr std::array<Strategy, 3> kAllStrategies{Strategy::overlap, Strategy::fused,
                                                         Strategy::every_step};

// "overlap", "fused", "every-step" (the spelling used in flags, CSV and JSON).
std::string_view to_string(Strategy s);
// Accepts "every-step" and "every_step"; InputError naming `field` otherwise.
Strategy parse_strategy(std::string_view text, std::string_view field = "strategy");

}  // namespace gaccum
