// What: the reduce-scatter and all-gather probe (p >= 2), reduce_scatter_perf / all_gather_perf
//       style, over the allreduce probe's messages (size sweep, the workload's bucket sizes, the
//       whole gradient). Per message S (float32, rounded to a multiple of 4 p bytes):
//         reduce-scatter: rank r holds S ((r+1) + i%13 at element i) and receives the sum of
//                         chunk r over ranks, S/p (expected p(p+1)/2 + p (i%13));
//         all-gather:     rank r contributes S/p ((r+1) + j%13) and receives all p chunks, S;
//       #wrong = elements that differ, summed over ranks; then comm_warmup untimed and comm_iters
//       timed collectives, barrier-aligned, each after kCommGap of untimed compute on CPU (as the
//       allreduce probe); time = mean over iterations of the max over ranks;
//       algbw = S / time, busbw = algbw (p-1)/p (nccl-tests' factor for both ops).
//       The method is the communicator's (comm/communicator.hpp: an all-to-all of the chunks
//       plus a local sum for reduce-scatter, the bytes of a ring reduce-scatter per rank).
// Why: sharded plans (model/plan_cost.hpp) are priced from these when a profile has them,
//      instead of half the measured allreduce.
#include <torch/torch.h>

#include <algorithm>
#include <set>

#include "core/canary.hpp"
#include "engine/iteration_driver.hpp"
#include "profiler/probe.hpp"

namespace gaccum::profiler {

CollectivePoint time_collective_c10d(comm::Communicator& comm, engine::IterationDriver& driver, bool reduce_scatter,
                                     Bytes bytes, int warmup, int iters) {
  const std::int64_t p = comm.world_size();
  const int rank = comm.rank();
  const std::int64_t chunk = std::max<std::int64_t>(1, static_cast<std::int64_t>(bytes / 4) / p);
  const std::int64_t n = chunk * p;  // elements of the full message
  const auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(comm.device());
  CollectivePoint pt;
  pt.op = reduce_scatter ? "reduce_scatter" : "all_gather";
  pt.method = reduce_scatter ? comm.reduce_scatter_method() : comm.all_gather_method();
  pt.backend = to_string(comm.backend());
  pt.world_size = p;
  pt.bytes = static_cast<Bytes>(n) * 4;
  const double pr = static_cast<double>(p);
  Count wrong = 0;
  // As the runner's sharded plans run them (comm/sharded_sync.hpp): the receive / staging
  // buffer given, so a collective allocates nothing.
  torch::Tensor in, res, scratch = torch::empty({n}, opts);
  if (reduce_scatter) {
    auto pattern = torch::arange(n, opts.dtype(torch::kInt64)).remainder(13).to(torch::kFloat32);
    in = (pattern + static_cast<double>(rank + 1)).contiguous();
    res = torch::empty({chunk}, opts);
    comm.reduce_scatter_sum_into(in, res, &scratch, false);
    auto mine = pattern.slice(0, rank * chunk, (rank + 1) * chunk);
    wrong = res.ne(mine * pr + pr * (pr + 1) / 2).sum().item<std::int64_t>();
  } else {
    auto pattern = torch::arange(chunk, opts.dtype(torch::kInt64)).remainder(13).to(torch::kFloat32);
    in = (pattern + static_cast<double>(rank + 1)).contiguous();
    res = torch::empty({n}, opts);
    comm.all_gather_into(in, res, &scratch);
    auto ranks = torch::arange(p, opts).add(1).repeat_interleave(chunk);
    wrong = res.ne(pattern.repeat({p}) + ranks).sum().item<std::int64_t>();
  }
  in.zero_();
  const Seconds gap = comm_gap_for(comm.device());
  auto timed = driver.run(2, warmup, iters, [&](engine::PhaseClock& clock, int) {
    busy_for(gap);
    clock.mark();
    if (reduce_scatter)
      comm.reduce_scatter_sum_into(in, res, &scratch, false);
    else
      comm.all_gather_into(in, res, &scratch);
    clock.mark();
  });
  for (double w : driver.gather(static_cast<double>(wrong))) pt.wrong += static_cast<Count>(w);
  pt.samples = timed.phases[1].samples;
  pt.time = TimingStats::from_samples(pt.samples).mean;
  pt.algbw = engine::algbw(pt.bytes, pt.time);
  pt.busbw = engine::busbw_scatter_gather(pt.bytes, pt.time, p);
  return pt;
}

namespace {

class CollectiveProbe final : public Probe {
 public:
  const char* name() const override { return "collectives"; }
  bool applies(const RankSession& s) const override { return s.world_size >= 2 && s.comm; }

  void run(RankSession& s, RankResults& out) override {
    std::vector<std::pair<Bytes, std::string>> msgs;
    for (Bytes b : s.plan.sizes) msgs.push_back({b, "sweep"});
    std::set<Bytes> seen;
    for (Bytes b : s.plan.buckets)
      if (seen.insert(b).second) msgs.push_back({b, "bucket"});
    if (s.plan.fused > 0) msgs.push_back({s.plan.fused, "fused"});
    for (const bool rs : {true, false})
      for (const auto& [bytes, tag] : msgs) {
        CollectivePoint pt = time_collective_c10d(*s.comm, s.driver, rs, bytes, s.plan.comm_warmup, s.plan.comm_iters);
        pt.tag = tag;
        out.collectives.push_back(pt);
      }
  }
};

}  // namespace

std::unique_ptr<Probe> make_collective_probe() { return std::make_unique<CollectiveProbe>(); }

}  // namespace gaccum::profiler
