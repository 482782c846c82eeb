// What: the allreduce probe (p >= 2), all_reduce_perf style. Messages: the size sweep (tag
//       "sweep"), each distinct DDP bucket size of the workload (tag "bucket", core/buckets.hpp)
//       and the whole gradient as one message (tag "fused"). Per message:
//         1. correctness: rank r fills element i with (r+1) + i%13, allreduce(sum), and counts
//            the elements that differ from p(p+1)/2 + p*(i%13) (exact in float32); #wrong is
//            the count summed over ranks;
//         2. timing: a zeroed buffer, comm_warmup untimed then comm_iters timed allreduces, each
//            barrier-aligned and, on CPU, after kCommGap of untimed compute (probe.hpp: as in a
//            step, where a collective follows compute); time = mean over iterations of the max
//            over ranks (per-iteration times exchanged through the communicator; the mean, since
//            a step pays the sum of its collectives); algbw/busbw as iteration_driver.hpp.
//       Buffers are float32 with bytes/4 elements (the cost of a message depends on its bytes).
//       Backends: Gloo (c10d) on CPU; on CUDA the raw NCCL probe (gpu/nccl_allreduce) when this
//       build has it, else c10d's ProcessGroupNCCL.
#include <torch/torch.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/canary.hpp"
#include "engine/watchdog.hpp"
#include "gpu/nccl_allreduce.hpp"
#include "profiler/probe.hpp"

namespace gaccum::profiler {
namespace {

struct Message {
  Bytes bytes;
  std::string tag;
};

std::vector<Message> messages(const RankPlan& plan) {
  std::vector<Message> out;
  for (Bytes b : plan.sizes) out.push_back({b, "sweep"});
  std::set<Bytes> seen;
  for (Bytes b : plan.buckets)
    if (seen.insert(b).second) out.push_back({b, "bucket"});
  if (plan.fused > 0) out.push_back({plan.fused, "fused"});
  return out;
}

class AllreduceProbe final : public Probe {
 public:
  const char* name() const override { return "allreduce"; }
  bool applies(const RankSession& s) const override { return s.world_size >= 2 && s.comm; }

  void run(RankSession& s, RankResults& out) override {
    const bool raw = s.plan.raw_nccl && s.comm->device().is_cuda() && gpu::nccl_probe_compiled();
    std::unique_ptr<gpu::NcclAllreduceProbe> nccl;
    if (raw) {
      auto& store = s.comm->store();
      gpu::IdExchange ex;
      ex.publish = [&store](const std::string& id) { store.set("nccl-probe/id", id); };
      ex.fetch = [&store] { return store.get("nccl-probe/id"); };
      nccl = std::make_unique<gpu::NcclAllreduceProbe>(s.rank, s.world_size, s.comm->device().index(), ex,
                                                      s.plan.timeout);
    }
    const std::string backend(to_string(raw ? Backend::nccl : s.comm->backend()));
    for (const auto& m : messages(s.plan)) {
      engine::Watchdog::beat_active();  // the raw NCCL probe times outside the iteration driver
      AllreducePoint p;
      if (nccl) {
        auto r = nccl->run(m.bytes, s.plan.comm_warmup, s.plan.comm_iters);
        p.world_size = s.world_size;
        p.bytes = r.bytes;
        std::vector<std::vector<double>> local;
        for (double t : r.samples) local.push_back({t});
        for (const auto& row : s.driver.max_over_ranks(local)) p.samples.push_back(row[0]);
        for (double w : s.driver.gather(static_cast<double>(r.wrong))) p.wrong += static_cast<Count>(w);
        p.time = TimingStats::from_samples(p.samples).mean;
        p.algbw = engine::algbw(p.bytes, p.time);
        p.busbw = engine::busbw(p.bytes, p.time, s.world_size);
      } else {
        p = time_allreduce_c10d(*s.comm, s.driver, m.bytes, s.plan.comm_warmup, s.plan.comm_iters);
      }
      p.backend = backend;
      p.tag = m.tag;
      out.allreduce.push_back(p);
    }
  }
};

}  // namespace

AllreducePoint time_allreduce_c10d(comm::Communicator& comm, engine::IterationDriver& driver, Bytes bytes, int warmup,
                                   int iters) {
  AllreducePoint p;
  p.backend = to_string(comm.backend());
  p.world_size = comm.world_size();
  const std::int64_t n = std::max<std::int64_t>(1, static_cast<std::int64_t>(bytes / 4));
  p.bytes = static_cast<Bytes>(n) * 4;
  auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(comm.device());
  auto pattern = torch::arange(n, opts.dtype(torch::kInt64)).remainder(13).to(torch::kFloat32);
  auto buf = (pattern + static_cast<double>(comm.rank() + 1)).contiguous();
  comm.allreduce_sum(buf);
  const double p_ranks = static_cast<double>(comm.world_size());
  auto expect = pattern * p_ranks + p_ranks * (p_ranks + 1) / 2;
  const auto wrong = buf.ne(expect).sum().item<std::int64_t>();
  buf.zero_();
  const Seconds gap = comm_gap_for(comm.device());
  auto timed = driver.run(2, warmup, iters, [&](engine::PhaseClock& clock, int) {
    busy_for(gap);
    clock.mark();
    comm.allreduce_sum(buf);
    clock.mark();
  });
  p.samples = timed.phases[1].samples;
  for (double w : driver.gather(static_cast<double>(wrong))) p.wrong += static_cast<Count>(w);
  p.time = TimingStats::from_samples(p.samples).mean;
  p.algbw = engine::algbw(p.bytes, p.time);
  p.busbw = engine::busbw(p.bytes, p.time, p.world_size);
  return p;
}

std::unique_ptr<Probe> make_allreduce_probe() { return std::make_unique<AllreduceProbe>(); }

}  // namespace gaccum::profiler
