// What: the cost model fitted on a measured profile.json, optionally scaled to a described
//       cluster (docs/DESIGN.md, Cost model; model/cost_model.hpp for the contract).
//   compute     model/compute_fit.hpp (per concurrency; beyond the profiled one: the largest)
//   memory      model/memory_fit.hpp (+ gradient-sized comm buffers when world_size > 1)
//   allreduce   at a profiled world_size: the measurements (bucket / fused / sweep sizes,
//               interpolated between sizes; model/allreduce_table.hpp); at another world_size
//               up to the largest profiled: the ring model with the (alpha, beta) fitted at the
//               nearest profiled world_size above it; beyond: the cluster's hierarchical model
//               (its intra-node link replaced by the profile's fit when the profile measured NCCL
//               at exactly gpus_per_node ranks), or without a cluster the ring model with the
//               largest profiled world_size's fit (flagged world_size_extrapolated).
//   overlap     efficiency from the OverlapPoints at this world_size (mean over micro_batch);
//               none there: GPU 1.0 (NCCL on its own stream), CPU the smallest measured at any
//               world_size, or 0 (no overlap) when none was measured.
//   optimizer   OptimizerPoint at the concurrency (same rule as compute).
//   copies      kSyncCopyPasses passes over the gradient per synchronisation; one pass priced at
//               optimizer time / optimizer_passes(optimizer) (model/strategy_cost.hpp).
//   buckets     core/buckets.hpp on the workload's parameter tensor sizes.
// Why: one profile of one machine answers for every (b, k, p, strategy), allocation-free.
#pragma once

#include <memory>

#include "core/profile.hpp"
#include "model/cluster.hpp"
#include "model/cost_model.hpp"

namespace gaccum::model {

// Throws ProfileError when the profile lacks what the model needs (compute, memory, optimizer
// measurements). `cluster` is copied.
std::unique_ptr<CostModel> make_profile_model(const Profile& profile, const Cluster* cluster = nullptr);

}  // namespace gaccum::model
