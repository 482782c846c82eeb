// What: `gaccum-tune profile` as a library call: resolves the device, rank counts, threads and
//       memory cap; runs the memory sweep and the gradient norms in this process; plans the
//       compute points under the time budget; launches one rank group per rank count
//       (engine::run_rank_job re-executing this binary as `_worker --role profile-rank`); merges
//       the rank result files; returns the complete Profile (core/profile.hpp).
//
// Contracts the cost model relies on (see also probe.hpp and each probe's header comment):
//   - threads_per_rank (default max(1, cores / max(ranks))) is set in every rank process and in
//     this process (memory sweep, gradient norms), recorded in hardware.threads_per_rank; the
//     runner uses the same value.
//   - ComputePoint / OptimizerPoint are measured for every p in ranks with p concurrent rank
//     processes (concurrent_ranks = p); values are the per-iteration max over ranks.
//   - MemoryPoint excludes communication buffers (memory_sweep.hpp).
//   - AllreducePoint: p >= 2 only (world_size 1 records none, with a note); tags sweep | bucket
//     | fused; time = mean over iterations of the max over ranks.
//   - GradNormPoint: at least two micro_batch sizes when max_micro_batch_fitting >= 2.
//   - OverlapPoint: one per p >= 2 (overlap_probe.cpp).
// Time budget (--time-budget): the doubling sweep stops growing after a third of it; extra
//   (refinement) compute points are added only while the projected total stays within it.
//   Required measurements always run, so a tiny budget still yields a complete profile.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/parse.hpp"
#include "core/profile.hpp"
#include "core/rank_env.hpp"
#include "workloads/workload.hpp"

namespace gaccum::profiler {

class Progress;

// The CPU "device" size when --device-memory is not given, chosen from a measurement so that CPU
// demos have a real memory trade-off, as on a GPU: gpt-tiny (Adam, float32) has 8,577,024 static
// bytes and 1,773,056 activation bytes per sample (peak 65,315,336 at micro_batch 32), so under
// the default 90% cap of 96 MiB (90,596,966 bytes) its largest fitting micro_batch is 46.
inline constexpr Bytes kDefaultCpuDeviceMemory = 96 * MiB;
// A user's TorchScript model on CPU without --device-memory: the device is sized to the model,
// 96 MiB doubled until micro_batch 32 is predicted to fit under the cap (the line through two
// measured sizes): the sweep still meets a memory limit near the top of its range, as on a GPU,
// and a ResNet-18 (11.2 M parameters, Adam: 179 MB of states) is not stopped by a 96 MiB default.
inline constexpr Count kDerivedDeviceMicroBatch = 32;
inline constexpr Count kDefaultCpuMaxMicroBatch = 64;
inline constexpr Count kDefaultCudaMaxMicroBatch = 1024;

struct ProfileRequest {
  workloads::WorkloadConfig workload;    // device unresolved: taken from `device`
  std::string device = "auto";           // auto | cpu | cuda | cuda:N
  std::vector<Count> micro_batches;      // empty: auto sweep
  MemoryCap memory_cap{std::nullopt, 0.9};
  std::optional<Bytes> device_memory;    // CPU "device" size; CUDA: defaults to the GPU's memory
  Count max_micro_batch = 0;             // 0: 64 on CPU, 1024 on CUDA
  Seconds time_budget = 30;
  std::vector<Count> ranks;              // empty: default_ranks
  std::vector<Bytes> sizes;              // empty: default_allreduce_sizes(gradient bytes)
  int warmup = 2, iters = 8;             // compute/optimizer: iters is the minimum per point
  double ci_target = 0.02;               // adaptive: the median's 95% interval within +-ci_target (0: fixed)
  int max_iters = 200;
  bool require_quiet = false;            // RuntimeFailure instead of a profile with unconfirmed numbers
  int comm_warmup = 3, comm_iters = 20;
  int threads_per_rank = 0;              // 0: default_threads_per_rank
  Optimizer optimizer = Optimizer::adam;  // one LibTorch has (lamb: profile adam, its profiled_as)
  double lr = 1e-3;
  std::uint64_t seed = 1;
  int grad_norm_batches = 8;
  Seconds rank_timeout = 60;             // rendezvous/collective timeout inside rank groups
  std::string worker_executable;         // re-executed as `_worker --role profile-rank`; empty: this
                                         // program (tests point it at gaccum-tune)
};

// InputError for unusable requests (naming the flag), InfeasibleError when the workload does not
// fit the cap at micro_batch 1, RuntimeFailure when a rank group fails (naming the rank).
Profile run_profile(const ProfileRequest& req, Progress& progress);

// `profile` under a cluster launcher (torchrun, Slurm, mpirun: runner/MULTINODE.md): this
// process is rank ctx.rank of the job, and the job's ranks are the one rank group.
//   1. every rank joins the rendezvous (Gloo on CPU, NCCL on cuda:<local rank>) and the node
//      layout is agreed (the launcher's node rank, else the host name; the same ranks per node);
//   2. rank 0 sweeps memory and the gradient norms on its device and plans the compute points;
//      the plan reaches the others through the store;
//   3. every rank runs the probes over the whole job (compute and optimizer with all ranks
//      computing, the max over ranks; allreduce, reduce-scatter/all-gather, overlap at the job's
//      world_size), then the allreduce sweep per level: inside each node (every node at once,
//      level intra_node) and across nodes (one rank per node, every local rank's group at once,
//      level inter_node);
//   4. rank 0 assembles the profile (topology: nodes, ranks per node, hosts; the compute spread
//      between nodes in the notes) and calls `write`; every rank returns after it, and every
//      rank throws RuntimeFailure when rank 0 could not finish.
void run_profile_as_rank(const ProfileRequest& req, const RankContext& ctx, Progress& progress,
                         const std::function<void(const Profile&)>& write);

}  // namespace gaccum::profiler
