// What/why: see strategy_cost.hpp.
#include "model/strategy_cost.hpp"

namespace gaccum::model {

SyncCost overlap_sync(const Exposure& last, Seconds copies, Count buckets) {
  return {last.comm_total + copies, last.exposed + copies, buckets};
}

SyncCost fused_sync(Seconds fused_allreduce, Seconds copies) {
  return {fused_allreduce + copies, fused_allreduce + copies, 1};
}

SyncCost every_step_sync(const Exposure& each, Seconds copies, Count buckets, Count k) {
  const double kd = double(k);
  return {kd * (each.comm_total + copies), kd * (each.exposed + copies), buckets * k};
}

int optimizer_passes(Optimizer optimizer) { return traits(optimizer).step_passes; }

}  // namespace gaccum::model
