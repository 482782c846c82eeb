// What: what one validation run executes on every rank (RunSpec), its JSON form (the worker's
//       --args file) and the data layout of its windows (which samples each rank reads).
// Why: the launcher side and every rank must agree on one plain value; the rank-agreement check
//      then compares its identity fields across ranks before step 1.
//
// Data: window w (optimizer step w) covers samples [w*B, w*B + B) of the stream `seed`, B =
//       micro_batch*accum_steps*world_size; rank r, micro-step m reads workloads::sample_offset
//       (w, r, m, b, k, p) .. +b, clipped to the dataset size. Exit codes of rank processes:
//       engine/rank_error.hpp. With dataset_size set, the run is
//       one epoch: floor(N/B) full windows, then the last partial window (N mod B samples):
//         partial_window "run"  (default) every rank still makes its k micro-steps (those with no
//                               samples left skip forward/backward but take part in the
//                               collectives) and the loss is normalised by the real samples/tokens
//                               of that window across ranks, so its gradient equals the one-pass
//                               gradient of the samples left; it is checked, not timed.
//         partial_window "drop" the partial window's samples are skipped (drop_last=True).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/backend.hpp"
#include "core/optimizer.hpp"
#include "core/plan.hpp"
#include "core/strategy.hpp"
#include "core/units.hpp"
#include "workloads/workload.hpp"

namespace gaccum::runner {

// The last partial window's policy (the Data paragraph above): "run" or "drop".
enum class PartialWindow { run, drop };
std::string_view to_string(PartialWindow w);
// InputError naming `flag`: expected run or drop.
PartialWindow parse_partial_window(std::string_view text, std::string_view flag = "--partial-window");
// A JSON field holding a PartialWindow is its name.
void to_json(nlohmann::json& j, PartialWindow w);

struct RunSpec {
  workloads::WorkloadConfig workload;  // dtype and device inside
  Count micro_batch = 4;
  Count accum_steps = 8;
  Count world_size = 2;                // every rank: pp x dp
  // Pipeline runs (runner/pipeline_run.hpp): pp stages of v chunks each, run in `schedule`;
  // rank = stage x dp + replica (Megatron-LM's order: pp outermost). pp 1: data parallel only.
  Count pp = 1;
  Count virtual_stages = 1;
  Schedule schedule = Schedule::one_f_one_b;
  // Tensor parallelism inside each stage (runner/pipeline_run.hpp): rank = stage x dp x tp +
  // replica x tp + tp rank (Megatron-LM's order: tp fastest).
  Count tp = 1;
  bool sequence_parallel = false;
  bool model_parallel() const { return pp > 1 || tp > 1; }  // run by runner/pipeline_run.hpp
  Strategy strategy = Strategy::overlap;
  ShardingChoice sharding;             // none (DDP), zero1, zero2, zero3 (comm/sharded_sync.hpp)
  Count steps = 20;                    // timed optimizer steps
  Count warmup = 3;                    // untimed steps first (step 0 carries the gradient checks)
  std::uint64_t seed = 0;              // data stream
  Optimizer optimizer = Optimizer::adam;  // one LibTorch has
  double lr = 1e-3;
  Count dataset_size = 0;              // 0: (warmup + steps) * global_batch, no partial window
  PartialWindow partial_window = PartialWindow::run;
  int threads_per_rank = 1;            // torch::set_num_threads in every rank
  Seconds timeout = 60;                // rendezvous, collectives, and the watchdog (no progress)
  Backend backend = Backend::gloo;     // gloo (cpu) | nccl (cuda)
  double rtol = 1.3e-6, atol = 1e-5;   // gradient equivalence (fp64: 1e-10, 1e-10)

  Count data_parallel() const { return world_size / (pp * tp); }  // replicas of each stage
  Count global_batch() const { return micro_batch * accum_steps * data_parallel(); }
  // The data-parallel run that reads the same samples: pp 1, world_size = dp (the reference's
  // view of a pipeline run's windows).
  RunSpec data_parallel_view() const;
  Count effective_dataset_size() const;       // dataset_size or (warmup + steps) * B
  Count full_windows() const;                 // windows of B samples
  Count partial_samples() const;              // samples of the last partial window (0: none)
  bool runs_partial_window() const { return partial_window == PartialWindow::run && partial_samples() > 0; }
  Count total_windows() const { return full_windows() + (runs_partial_window() ? 1 : 0); }
  Count timed_steps() const { return full_windows() - warmup; }
  // Samples [first, first + count) that data-parallel replica r (the rank when pp is 1) reads in micro-step m of window w (count may be
  // below micro_batch, or 0, in the partial window).
  std::pair<Count, Count> micro_range(Count window, Count rank, Count micro) const;
  Count window_samples(Count window) const;   // real samples of window w across ranks

  // InputError naming the flag for any unusable value.
  void validate() const;
};

nlohmann::json to_json(const RunSpec& s);
RunSpec run_spec_from_json(const nlohmann::json& j, const std::string& what);

// Default gradient-equivalence tolerances for a dtype: float32 rtol 1.3e-6 atol 1e-5 (PyTorch's
// DDP tests), float64 1e-10 / 1e-10.
std::pair<double, double> default_tolerances(const std::string& dtype);

}  // namespace gaccum::runner
