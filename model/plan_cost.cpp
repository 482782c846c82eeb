// What/why: the plan table of plan_cost.hpp.
#include "model/plan_cost.hpp"

#include <fmt/format.h>

namespace gaccum::model {

StateSizes model_state_sizes(Count params, Precision precision, int slots, int grad_element_bytes) {
  const auto& t = traits(precision);
  const Bytes psi = static_cast<Bytes>(params);
  const Bytes e = static_cast<Bytes>(t.element_bytes);
  StateSizes s;
  s.weights = e * psi;
  s.gradients = (grad_element_bytes > 0 ? static_cast<Bytes>(grad_element_bytes) : e) * psi;
  s.optimizer = (4 * static_cast<Bytes>(slots) + (t.mixed ? 4 : 0)) * psi;
  s.largest_unit = s.weights;
  s.largest_unit_grad = s.gradients;
  s.units = 1;
  s.bucket_buffers = s.gradients;
  return s;
}

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::allreduce: return "allreduce";
    case CollectiveOp::reduce_scatter: return "reduce-scatter";
    case CollectiveOp::all_gather: return "all-gather";
  }
  return "?";
}

Count shard_group(const Config& c) { return shard_group_size(c.sharding, c.world_size); }

Count replicas(const Config& c) {
  const Count n = shard_group(c);
  return c.sharding.sharding == Sharding::hsdp && n > 0 ? c.world_size / n : 1;
}

std::optional<std::string> plan_rejection(const Config& c) {
  const Sharding sh = c.sharding.sharding;
  if (sh == Sharding::none) return std::nullopt;
  if (c.world_size < 2)
    return fmt::format("{} at world_size 1: there is nothing to shard across (use sharding none)",
                       to_string(c.sharding));
  if (sh == Sharding::hsdp) {
    const Count g = c.sharding.group;
    if (g < 2) return std::string("hsdp needs its shard group size: hsdp:G with G ranks per group (e.g. GPUs per node)");
    if (g >= c.world_size)
      return fmt::format("hsdp:{} at world_size {}: a group of {} ranks leaves no replicas (that is zero3; use a G below "
                         "the world size)",
                         g, c.world_size, g);
    if (c.world_size % g != 0)
      return fmt::format("hsdp:{} at world_size {}: the world size must be a multiple of the group size {}", g,
                         c.world_size, g);
  }
  if (sh == Sharding::zero1 && traits(c.strategy).every_micro_step)
    return std::string(
        "zero1 with every-step: zero1 keeps full gradients, so reducing them on every micro-step saves no memory and no "
        "framework does it (use overlap or fused, or zero2 for sharded gradients)");
  return std::nullopt;
}

SyncPlan sync_plan(const Config& c) {
  SyncPlan plan;
  auto add = [&](CollectiveOp op, CommGroup g, CommPhase ph, bool every, bool params, Count divisor = 1) {
    plan.uses[plan.count++] = CollectiveUse{op, g, ph, every, params, divisor};
  };
  const Strategy st = c.strategy;
  const bool every = traits(st).every_micro_step;
  const CommPhase grad_phase = traits(st).bucketed ? CommPhase::backward : CommPhase::after_backward;
  plan.gradient_every_micro_step = every;
  switch (c.sharding.sharding) {
    case Sharding::none:
      add(CollectiveOp::allreduce, CommGroup::world, grad_phase, every, false);
      break;
    case Sharding::zero1:
    case Sharding::zero2:
      add(CollectiveOp::reduce_scatter, CommGroup::world, grad_phase, every, false);
      add(CollectiveOp::all_gather, CommGroup::world, CommPhase::after_step, false, true);
      break;
    case Sharding::zero3:
      add(CollectiveOp::all_gather, CommGroup::world, CommPhase::forward, true, true);
      add(CollectiveOp::all_gather, CommGroup::world, CommPhase::backward, true, true);
      add(CollectiveOp::reduce_scatter, CommGroup::world, grad_phase, every, false);
      break;
    case Sharding::hsdp:
      add(CollectiveOp::all_gather, CommGroup::shard, CommPhase::forward, true, true);
      add(CollectiveOp::all_gather, CommGroup::shard, CommPhase::backward, true, true);
      add(CollectiveOp::reduce_scatter, CommGroup::shard, grad_phase, every, false);
      add(CollectiveOp::allreduce, CommGroup::replica, grad_phase, false, false, std::max<Count>(1, shard_group(c)));
      break;
  }
  return plan;
}

MemoryBreakdown plan_memory(const Config& c, const StateSizes& s) {
  const auto& t = traits(c.sharding.sharding);
  const Count n = c.world_size > 1 ? std::max<Count>(1, shard_group(c)) : 1;
  const Bytes nb = static_cast<Bytes>(n);
  const bool sharded = c.sharding.sharding != Sharding::none && n > 1;
  // The flat layout: shard = sum ceil(S_u / n) parameters, padded = n x shard, largest padded unit.
  // (DDP, the hot path of most searches, needs none of it.)
  Count shard_params = 0, padded_max = 0;
  if (sharded)
    for (Count u : s.unit_params) {
      const Count per = (u + n - 1) / n;
      shard_params += per;
      padded_max = std::max(padded_max, per * n);
    }
  const bool flat = !s.unit_params.empty() && s.params > 0;
  const Bytes psi = static_cast<Bytes>(std::max<Count>(1, s.params));
  auto part = [&](Bytes total, Count elems) {  // `total` spread evenly over psi parameters, for `elems` of them
    const Bytes e = static_cast<Bytes>(elems);
    return total / psi * e + total % psi * e / psi;
  };
  auto shard = [&](Bytes b) { return flat ? part(b, shard_params) : (b + nb - 1) / nb; };
  auto padded = [&](Bytes b) { return flat ? part(b, shard_params * n) : b; };
  const Bytes unit_w = flat ? part(s.weights, padded_max) : s.largest_unit;
  const Bytes unit_g = flat ? part(s.gradients, padded_max) : s.largest_unit_grad;
  MemoryBreakdown m;
  m.weights = !sharded ? s.weights : t.shards_parameters ? shard(s.weights) : padded(s.weights);
  m.gradients = s.gradients;
  if (sharded)
    m.gradients = t.shards_gradients && !holds_whole_gradient(c.strategy, c.accum_steps) ? shard(s.gradients)
                  : s.contiguous_grad_buffer && !t.shards_gradients                       ? s.gradients
                                                                                           : s.gradients + shard(s.gradients);
  m.optimizer_state = sharded && t.shards_optimizer ? shard(s.optimizer) : s.optimizer;
  m.gathered = sharded && t.shards_parameters ? std::min(padded(s.weights), Bytes(kPrefetchUnits) * unit_w) : 0;
  // Offloaded state lives in host memory: not on the device (its transfer time is not modelled).
  if (c.offload_optimizer) m.optimizer_state = 0;
  if (c.offload_params && c.sharding.sharding == Sharding::zero3) m.weights = 0;
  m.weights += s.unsharded;
  if (c.world_size > 1)
    m.comm_buffers = s.contiguous_grad_buffer && !t.shards_gradients ? 0
                     : !sharded                                      ? s.bucket_buffers
                     : flat                                          ? 2 * unit_g
                                                                     : std::min(s.gradients, 2 * unit_g);
  return m;
}

Seconds pipelined_exposure(Seconds comm, Seconds compute, Count pieces, double efficiency) {
  if (comm <= 0) return 0;
  const double n = double(std::max<Count>(1, pieces));
  const Seconds ideal = std::min(comm, comm / n + std::max<Seconds>(0, comm - compute) * (n - 1) / n);
  return ideal + (1.0 - std::clamp(efficiency, 0.0, 1.0)) * (comm - ideal);
}

}  // namespace gaccum::model
