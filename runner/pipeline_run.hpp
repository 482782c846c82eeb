// What: one rank of a pipeline validation run (`validate --pp P --schedule S [--virtual-stages V]`):
//       the built-in gpt cut into P x V chunks (workloads::StagedModel: chunk j of rank j mod P,
//       embedding on the first, head on the last), each rank executing its list of the schedule's
//       operations (model/pipeline.hpp schedule_ops, the very lists the cost model prices):
//         F(i, c)  receive microbatch i's hidden state from the previous model stage (stage 0:
//                  build the batch), forward through chunk c, post the send of its output to the
//                  next model stage (the last chunk: the loss sum x dp / the window's real tokens)
//         B(i, c)  receive the output's gradient from the next model stage (the last chunk: none),
//                  backward through the chunk, post the send of its input's gradient back
//       Sends are posted and waited for later (a rank that blocked in a send while its peer blocked
//       in its own would deadlock 1F1B's steady state): an output's send by its B (its gradient
//       came back, so it was received), the input gradients' sends at the window's end. Then each
//       stage's gradients are averaged over its dp replicas (one fused allreduce over the stage's
//       group, comm/grad_sync.hpp) and the optimizer steps the stage's parameters.
//   Rank layout: rank = stage x dp + replica (pp outermost, docs/DESIGN.md "Pipeline plans");
//   replica r reads the samples data-parallel rank r of a dp-rank run would (RunSpec::micro_range).
//   Checks (beside the data-parallel ones, runner/record_checks.hpp):
//     gradient_equivalence   step 0: every stage's synced gradient, gathered on rank 0, vs the
//                            one-pass reference of the full model over the window's samples
//     parameters_identical   each stage's replicas bitwise identical (stages differ)
//     schedule_order         each rank's executed operations (window 0) equal the schedule's list
//     microbatches_in_flight the most microbatch chunks a rank held at once equals the simulation's
//     stage_memory           each rank's peak over the timed windows vs the replay of its operation
//                            list (replay_stage_memory) with the byte sizes one forward and one
//                            backward of each chunk were measured at in window 1: byte-exact on CPU
//   and the bubble: measured idle vs model::simulate replaying the measured operation times.
// Why: the pipeline plans' bubble, per-stage memory and microbatches in flight are predictions;
//      a real schedule on c10d proves (or refutes) them, and catches the frameworks' own bugs in
//      this place (wrong loss scaling with accumulation under pp, hangs with m < p).
// Units: bytes, seconds.
#pragma once

#include <vector>

#include "core/units.hpp"
#include "model/pipeline.hpp"
#include "runner/rank_run.hpp"

namespace gaccum::runner {

// One chunk's bytes, measured around its operations (deltas of the allocator's live bytes):
struct ChunkMemory {
  Bytes forward_peak = 0;   // above the level before F, at F's high-water mark
  Bytes held = 0;           // live after F (input, saved activations, output) until its B
  Bytes backward_peak = 0;  // above the level before B, at B's high-water mark
  Bytes sent_gradient = 0;  // live after B: the input gradient whose send is waited at the window's end
};

// The peak of one rank's window: the level starts at `resident`; F(c) peaks at level +
// forward_peak[c] and adds held[c]; B(c) peaks at level + backward_peak[c] and adds
// sent_gradient[c] - held[c]; after the operations the gradients' sends are released and the
// optimizer step peaks at resident + optimizer_peak. chunks[c] for the rank's chunk c.
Bytes replay_stage_memory(const std::vector<model::PipeOp>& ops, const std::vector<ChunkMemory>& chunks,
                          Bytes resident, Bytes optimizer_peak);

// The closed-form bubble of balanced stages: (p - 1) / (v m + p - 1) (v = 1: gpipe and 1f1b).
double closed_form_bubble(Count p, Count v, Count m);

// "F3.1": the operation's kind, microbatch and chunk.
std::string op_name(const model::PipeOp& op);

int run_pipeline_rank(const RunSpec& spec, const comm::RankContext& ctx, const RankRunOptions& opts);

}  // namespace gaccum::runner
