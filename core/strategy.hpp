// What: the gradient-synchronisation strategies (docs/DESIGN.md, Cost model) and their names.
//   overlap    DDP + no_sync() on the first k-1 micro-steps; bucketed allreduce overlapped with
//              the last backward.
//   fused      Horovod backward_passes_per_step=k: local accumulation, one fused allreduce after
//              the last backward, nothing overlapped.
//   every_step DDP without no_sync(): bucketed allreduce on every micro-step (the common mistake).
//   One traits table says when each strategy reduces gradients during a window of k micro-steps
//   and how (the schedule comm/grad_sync.cpp runs, the runner checks and model/plan_cost.cpp
//   prices): nothing else switches on the strategy to decide its collectives.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "core/units.hpp"

namespace gaccum {

enum class Strategy { overlap, fused, every_step };

inline constexpr std::array<Strategy, 3> kAllStrategies{Strategy::overlap, Strategy::fused,
                                                         Strategy::every_step};

struct StrategyTraits {
  Strategy value;
  std::string_view name;       // flag / CSV / JSON spelling
  bool every_micro_step;       // reduces in every micro-step (else only in the last one)
  bool bucketed;               // bucketed (DDP buckets, launched from autograd hooks while backward
                               // runs); else one fused message after the last backward
};

inline constexpr StrategyTraits kStrategyTraits[] = {
    {Strategy::overlap, "overlap", false, true},
    {Strategy::fused, "fused", false, false},
    {Strategy::every_step, "every-step", true, true},
};

constexpr const StrategyTraits& traits(Strategy s) { return kStrategyTraits[static_cast<int>(s)]; }

// Whether micro-step m (0-based) of a window of k reduces gradients, at world_size > 1.
constexpr bool syncs_in_micro_step(Strategy s, Count m, Count k) { return traits(s).every_micro_step || m == k - 1; }

// Whether a rank holds its whole local gradient until the window's reduction (no_sync()'s
// accumulation, or one fused reduction after the backward), where a sharded plan (zero2, zero3,
// hsdp) would otherwise keep only its shard: not when it reduces on every micro-step, and not in a
// window of one micro-step reduced bucket by bucket during its only backward (overlap at
// accum_steps 1 is every-step's run: FSDP and DeepSpeed reduce-scatter each unit as its gradient
// is ready and free it).
constexpr bool holds_whole_gradient(Strategy s, Count k) {
  return !traits(s).every_micro_step && !(traits(s).bucketed && k <= 1);
}

// "overlap", "fused", "every-step" (the spelling used in flags, CSV and JSON).
std::string_view to_string(Strategy s);
// Accepts "every-step" and "every_step"; InputError naming `field` otherwise.
Strategy parse_strategy(std::string_view text, std::string_view field = "strategy");

}  // namespace gaccum
