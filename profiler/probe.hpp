// What: the plug-in interface of the probes that run inside rank processes (nccl-tests style:
//       the driver times, a probe only says what one iteration does), the plan every rank
//       receives from the parent (`_worker --role profile-rank --args FILE`), and the results a
//       rank hands back.
// Probes, in the order a rank runs them (each in its own file):
//   compute   (compute_probe.cpp)   make_batch | forward+loss | backward per micro_batch
//   optimizer (optimizer_probe.cpp) zero_grad + optimizer.step
//   allreduce (allreduce_probe.cpp) message-size sweep, bucket sizes, fused gradient (p >= 2)
//   overlap   (overlap_probe.cpp)   backward vs bucket allreduces vs both at once (p >= 2)
// The memory sweep and the gradient norms run in the parent process (memory_sweep.cpp,
// grad_norm_probe.cpp), where the exact tracking allocator sees one model alone.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "comm/communicator.hpp"
#include "core/profile.hpp"
#include "engine/iteration_driver.hpp"
#include "workloads/workload.hpp"

namespace gaccum::profiler {

// The compute each timed collective follows on CPU (core/canary.hpp busy_for, untimed): in a
// training step a rank computes, then communicates; a collective timed right after the previous
// one (or a barrier) is faster than one that follows compute on this VM (docs/DESIGN.md, "Waiting
// for collectives on CPU"). On a GPU the rank's compute is on the device: no gap (0).
inline constexpr Seconds kCommGap = 2e-3;
inline Seconds comm_gap_for(const torch::Device& device) { return device.is_cpu() ? kCommGap : 0.0; }

// What the parent asks every rank of one rank count to measure (the --args JSON file).
struct RankPlan {
  workloads::WorkloadConfig workload;   // device "cpu" or "cuda:N"; in groups of >= 2 ranks,
                                        // rank r uses cuda:<local rank>
  int threads_per_rank = 1;             // torch::set_num_threads in the rank (contract)
  int warmup = 2, iters = 5;            // compute, optimizer, overlap (iters: the minimum when adaptive)
  double ci_target = 0;                 // compute, optimizer: adaptive until the median's 95% interval
  int max_iters = 0;                    //   is within +-ci_target (engine::AdaptivePolicy); 0: fixed
  Seconds compute_budget = 0;           // wall seconds of the compute rounds (0: no limit)
  Seconds optimizer_budget = 0;
  int comm_warmup = 3, comm_iters = 20; // allreduce sweep
  Optimizer optimizer = Optimizer::adam;  // one LibTorch has
  double lr = 1e-3;
  std::uint64_t seed = 1;               // data stream of the timed micro-batches
  std::vector<Count> micro_batches;     // compute points, ascending
  std::vector<Bytes> sizes;             // allreduce sweep (tag "sweep")
  std::vector<Bytes> buckets;           // the workload's DDP buckets in launch order (tag "bucket")
  Bytes fused = 0;                      // the whole gradient as one message (tag "fused")
  bool raw_nccl = false;                // CUDA: time allreduce with the raw NCCL probe (gpu/)
  Seconds timeout = 60;                 // rendezvous and collective timeout
  std::string job_dir;                  // set by engine::run_rank_job: rank r writes rank<r>.json, rank<r>.log

  // The adaptive timing of a compute or optimizer run: warmup, iters as the minimum, max_iters,
  // ci_target, and the run's own wall budget.
  engine::AdaptivePolicy timing(Seconds budget) const;

  nlohmann::json to_json() const;
  static RankPlan from_json(const nlohmann::json& j);
};

// What a probe sees inside one rank process.
struct RankSession {
  const RankPlan& plan;
  workloads::Workload& workload;
  std::vector<torch::Tensor> params;
  torch::optim::Optimizer& optimizer;
  comm::Communicator* comm;   // null at world_size 1
  engine::IterationDriver& driver;
  int rank = 0;
  int world_size = 1;
};

// The first sample of iteration `it` at micro_batch b on this rank: every rank and iteration of a
// probe reads distinct samples.
inline Count first_sample(const RankSession& s, int it, Count b) {
  return (static_cast<Count>(it) * s.world_size + s.rank) * b;
}

// Forward and the mean loss (loss sum / loss terms) of the micro-batch of b samples from `first`
// of data stream `seed`: the loss a probe's backward starts from.
torch::Tensor mean_loss(RankSession& s, std::uint64_t seed, Count first, Count b);

// What a rank returns: the cross-rank reduced points (identical on every rank) and this rank's
// own diagnostics (`local`, e.g. its median micro_step per micro_batch, for rank skew).
struct RankResults {
  std::vector<ComputePoint> compute;
  std::vector<OptimizerPoint> optimizer;
  std::vector<AllreducePoint> allreduce;
  std::vector<CollectivePoint> collectives;  // reduce-scatter / all-gather
  std::vector<OverlapPoint> overlap;
  std::vector<std::string> notes;
  nlohmann::json local = nlohmann::json::object();
};

class Probe {
 public:
  virtual ~Probe() = default;
  virtual const char* name() const = 0;
  virtual bool applies(const RankSession& s) const = 0;
  // Appends its points to `out`; may read what earlier probes appended (overlap reads compute
  // and bucket allreduce times to pick its reference micro_batch).
  virtual void run(RankSession& s, RankResults& out) = 0;
};

std::unique_ptr<Probe> make_compute_probe();
std::unique_ptr<Probe> make_optimizer_probe();
std::unique_ptr<Probe> make_allreduce_probe();
// The allreduce probe's c10d measurement of one message over `comm` (allreduce_probe.cpp): the
// correctness pass, then `warmup` untimed and `iters` timed barrier-aligned allreduces of
// bytes/4 float32 elements; time = mean of the per-iteration max over ranks, algbw/busbw, #wrong
// summed over ranks. Tag "sweep", level job (the caller sets either). Every rank of comm calls it.
AllreducePoint time_allreduce_c10d(comm::Communicator& comm, engine::IterationDriver& driver, Bytes bytes, int warmup,
                                   int iters);
std::unique_ptr<Probe> make_collective_probe();
// The collective probe's measurement of one reduce-scatter (or all-gather) of a full message of
// `bytes` over `comm` (collective_probe.cpp): correctness, then timing, as time_allreduce_c10d.
CollectivePoint time_collective_c10d(comm::Communicator& comm, engine::IterationDriver& driver, bool reduce_scatter,
                                     Bytes bytes, int warmup, int iters);
std::unique_ptr<Probe> make_overlap_probe();

}  // namespace gaccum::profiler
