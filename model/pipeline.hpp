// What: pipeline schedules as data, and the event simulation that prices them
//       (docs/DESIGN.md, Pipeline plans). p pipeline ranks, v chunks per rank, m microbatches.
//   Model stage j = c p + r holds chunk c of rank r (Megatron-LM's interleaved placement; v = 1:
//   stage j is rank j). Operations: F(i, c) forward of microbatch i through chunk c; B(i, c) its
//   backward (the input gradient only when the schedule splits the weight gradient); W(i, c) the
//   weight gradient (zb-h1).
//   schedule_ops(s, p, v, m)   each rank's ordered operations:
//     gpipe             F(0..m-1), then B(0..m-1)
//     1f1b              w = min(p - r - 1, m) warm-up F, then (F, B) pairs, then the last w B
//                       (Megatron's num_warmup_microbatches; DeepSpeed's TrainSchedule)
//     interleaved-1f1b  Megatron's order: the k-th forward runs chunk (k mod p v) / p of
//                       microbatch (k / p v) p + k mod p (backward: chunk v - 1 - that); warm-up
//                       min(2 (p - r - 1) + (v - 1) p, m v) forwards, then (F, B) pairs, cooldown
//     zb-h1             1f1b's F and B, each W(i) placed after B(i + d_r), d_r = p - r - 1 (the
//                       rank's warm-up depth), the remaining W at the end: the weight gradients
//                       fill the cooldown's wait (Qi et al. 2023, ZB-H1)
//   simulate(ops, times)   replays the lists: an operation starts when its rank is free and its
//     input is there (F(i, j) after F(i, j - 1) plus the P2P time; B(i, j) after B(i, j + 1) plus
//     the P2P time, and after F(i, j); W after its B). Busy and idle seconds per rank, the
//     makespan, and the activations in flight (allocated at F's start, freed at B's end) come
//     out of one mechanism. A list whose dependencies cannot be met is a deadlock (an error).
//   Closed forms it reproduces (balanced stages, no P2P, tested in tests/unit/test_pipeline.cpp):
//     1f1b / gpipe      makespan (m + p - 1)(t_f + t_b): bubble (p - 1)/(m + p - 1)
//     interleaved       bubble (p - 1)/(v m + p - 1)
//     zb-h1             t_f = t_b = t_w: bubble (p - 1)/(3 m + p - 1)
//     in flight         1f1b rank r: min(p - r, m); gpipe: m; interleaved rank 0: (v - 1) p +
//                       2 (p - 1) + 1 chunks (Megatron's warm-up + 1)
// Why: the bubble, uneven stages and microbatches in flight come from the very lists a runner
//      executes (issue: real pipeline runs replay them and compare the recorded order).
// Units: Seconds; activations in the caller's units (bytes per microbatch chunk).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/units.hpp"

namespace gaccum::model {

enum class PipeOpKind : std::uint8_t { forward, backward, weight };
struct PipeOp {
  PipeOpKind kind = PipeOpKind::forward;
  Count microbatch = 0;
  Count chunk = 0;
  bool operator==(const PipeOp& o) const { return kind == o.kind && microbatch == o.microbatch && chunk == o.chunk; }
};
const char* to_string(PipeOpKind k);  // "F", "B", "W"

using PipeSchedule = std::vector<std::vector<PipeOp>>;  // [rank][order]

// Why (p, v, m) cannot run this schedule, with the fix, or nullopt: m >= 1; 1f1b, zb-h1 and
// interleaved need m >= p (torch's Schedule1F1B; fewer microbatches than stages leave ranks
// without a steady state); interleaved needs v >= 2 and m divisible by p (Megatron's groups of p
// microbatches); the others v = 1.
std::optional<std::string> schedule_rejection(Schedule s, Count p, Count v, Count m);
// Each rank's ordered operations. InputError when schedule_rejection refuses.
PipeSchedule schedule_ops(Schedule s, Count p, Count v, Count m);

// Per-operation seconds and activation sizes, indexed [chunk * p + rank] (model stage order).
struct StageTimes {
  std::vector<Seconds> forward, backward, weight;  // weight: 0 unless the schedule splits it
  std::vector<double> activations;  // held from F's start to B's end, per microbatch
  Seconds p2p = 0;                  // one send between consecutive model stages
};

struct PipelineRun {
  Seconds makespan = 0;
  std::vector<Seconds> busy, idle;   // per rank
  std::vector<Count> peak_in_flight; // per rank: microbatch chunks held at once, at most
  std::vector<double> peak_activations;  // per rank: the largest sum of held activations
  double bubble_fraction() const;    // idle over makespan, averaged over ranks
};

// InputError (naming the rank and operation) when the lists deadlock.
PipelineRun simulate(const PipeSchedule& ops, Count v, const StageTimes& t);

}  // namespace gaccum::model
