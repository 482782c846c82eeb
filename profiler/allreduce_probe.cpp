// What: the allreduce probe (p >= 2), all_reduce_perf style. Messages: the size sweep (tag
//       "sweep"), each distinct DDP bucket size of the workload (tag "bucket", core/buckets.hpp)
//       and the whole gradient as one message (tag "fused"). Per message:
//         1. correctness: rank r fills element i with (r+1) + i%13, allreduce(sum), and counts
//            the elements that differ from p(p+1)/2 + p*(i%13) (exact in float32); #wrong is
//            the count summed over ranks;
//         2. timing, every message interleaved (time_interleaved below): a zeroed buffer per
//            message, comm_warmup untimed allreduces each, then rounds that run 2 timed
//            allreduces of every message (ascending sizes, then descending) until each has
//            comm_iters; each barrier-aligned and, on CPU, after kCommGap of untimed compute
//            (probe.hpp: as in a step, where a collective follows compute); time = mean over
//            iterations of the max over ranks (per-iteration times exchanged through the
//            communicator; the mean, since a step pays the sum of its collectives);
//            algbw/busbw as iteration_driver.hpp.
//       Buffers are float32 with bytes/4 elements (the cost of a message depends on its bytes).
//       Backends: Gloo (c10d) on CPU; on CUDA the raw NCCL probe (gpu/nccl_allreduce) when this
//       build has it, else c10d's ProcessGroupNCCL.
// Why interleaved: this VM's collectives change speed from one second to the next (a bucket
//      size's median moved 0.43 -> 0.87 ms between profiles a minute apart); timed one size
//      after another, each size saw its own ~70 ms of the machine and the sizes a step sums
//      disagreed by up to 2x; in rounds every size samples the whole sweep's seconds, as the
//      compute probe's micro_batch sizes do (docs/DESIGN.md, "Measurement quality").
#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "core/canary.hpp"
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
    const auto msgs = messages(s.plan);
    std::vector<AllreducePoint> points;
    if (nccl) {
      for (const auto& m : msgs) {
        auto r = nccl->run(m.bytes, s.plan.comm_warmup, s.plan.comm_iters);
        AllreducePoint p;
        p.world_size = s.world_size;
        p.bytes = r.bytes;
        std::vector<std::vector<double>> local;
        for (double t : r.samples) local.push_back({t});
        for (const auto& row : s.driver.max_over_ranks(local)) p.samples.push_back(row[0]);
        for (double w : s.driver.gather(static_cast<double>(r.wrong))) p.wrong += static_cast<Count>(w);
        p.time = TimingStats::from_samples(p.samples).mean;
        p.algbw = engine::algbw(p.bytes, p.time);
        p.busbw = engine::busbw(p.bytes, p.time, s.world_size);
        points.push_back(p);
      }
    } else {
      std::vector<Bytes> sizes;
      for (const auto& m : msgs) sizes.push_back(m.bytes);
      points = time_allreduce_c10d(*s.comm, s.driver, sizes, s.plan.comm_warmup, s.plan.comm_iters);
    }
    for (std::size_t i = 0; i < points.size(); ++i) {
      points[i].backend = backend;
      points[i].tag = msgs[i].tag;
      out.allreduce.push_back(points[i]);
    }
  }
};

}  // namespace

std::vector<std::vector<Seconds>> time_interleaved(engine::IterationDriver& driver, const torch::Device& device,
                                                   const std::vector<std::function<void()>>& launches, int warmup,
                                                   int iters) {
  engine::AdaptivePolicy policy;
  policy.warmup = warmup;
  policy.min_iters = iters;
  policy.chunk = 2;
  policy.ci_target = 0;    // a fixed count: exactly `iters` per message
  policy.judged_phase = 1; // the warm-up judges the collective, not the gap before it
  const Seconds gap = comm_gap_for(device);
  auto run = driver.run_interleaved(static_cast<int>(launches.size()), 2, policy,
                                    [&](int point, engine::PhaseClock& clock, int) {
                                      busy_for(gap);
                                      clock.mark();
                                      launches[static_cast<std::size_t>(point)]();
                                      clock.mark();
                                    });
  std::vector<std::vector<Seconds>> out;
  for (const auto& p : run.points) out.push_back(p.phases[1].samples);
  return out;
}

std::vector<AllreducePoint> time_allreduce_c10d(comm::Communicator& comm, engine::IterationDriver& driver,
                                                const std::vector<Bytes>& sizes, int warmup, int iters) {
  auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(comm.device());
  const double p_ranks = static_cast<double>(comm.world_size());
  std::vector<AllreducePoint> points;
  std::vector<torch::Tensor> bufs;
  std::vector<std::function<void()>> launches;
  for (Bytes bytes : sizes) {
    AllreducePoint p;
    p.backend = to_string(comm.backend());
    p.world_size = comm.world_size();
    const std::int64_t n = std::max<std::int64_t>(1, static_cast<std::int64_t>(bytes / 4));
    p.bytes = static_cast<Bytes>(n) * 4;
    auto pattern = torch::arange(n, opts.dtype(torch::kInt64)).remainder(13).to(torch::kFloat32);
    auto buf = (pattern + static_cast<double>(comm.rank() + 1)).contiguous();
    comm.allreduce_sum(buf);
    const auto wrong = buf.ne(pattern * p_ranks + p_ranks * (p_ranks + 1) / 2).sum().item<std::int64_t>();
    for (double w : driver.gather(static_cast<double>(wrong))) p.wrong += static_cast<Count>(w);
    buf.zero_();
    bufs.push_back(buf);
    points.push_back(p);
  }
  for (auto& buf : bufs) launches.push_back([&comm, &buf] { comm.allreduce_sum(buf); });
  const auto samples = time_interleaved(driver, comm.device(), launches, warmup, iters);
  for (std::size_t i = 0; i < points.size(); ++i) {
    auto& p = points[i];
    p.samples = samples[i];
    p.time = TimingStats::from_samples(p.samples).mean;
    p.algbw = engine::algbw(p.bytes, p.time);
    p.busbw = engine::busbw(p.bytes, p.time, p.world_size);
  }
  return points;
}

std::unique_ptr<Probe> make_allreduce_probe() { return std::make_unique<AllreduceProbe>(); }

}  // namespace gaccum::profiler
