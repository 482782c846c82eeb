// What: the overlap probe (p >= 2): how much the last backward of a window and the bucketed
//       gradient allreduce of the `overlap` strategy slow each other on this host (on CPU,
//       Gloo's communication threads compete with the compute threads for the same cores).
//       At a reference micro_batch b_ref, three barrier-aligned timed runs:
//         backward_alone  forward+loss untimed, then backward
//         comm_alone      after kCommGap of untimed compute on CPU (probe.hpp: a collective
//                         follows compute in a step, as in `overlapped`), all DDP bucket
//                         allreduces issued back-to-back asynchronously, then waited (launch
//                         order, core/buckets.hpp)
//         overlapped      forward+loss untimed, then the same bucket allreduces issued
//                         asynchronously, backward meanwhile, then all waited
//       Each value is the median over iterations of the max over ranks.
//       b_ref: the smallest measured compute point whose backward (at this p) takes at least as
//       long as the bucket allreduces (from the allreduce probe's bucket times), else the
//       largest measured one: where overlap matters most. Same choice on every rank (inputs
//       are cross-rank reduced).
// Contract with the cost model: it derives an overlap efficiency from these three numbers.
#include <torch/torch.h>

#include <algorithm>
#include <map>

#include "core/canary.hpp"
#include "profiler/probe.hpp"

namespace gaccum::profiler {
namespace {

class OverlapProbe final : public Probe {
 public:
  const char* name() const override { return "overlap"; }
  bool applies(const RankSession& s) const override {
    return s.world_size >= 2 && s.comm && !s.plan.buckets.empty() && !s.plan.micro_batches.empty();
  }

  void run(RankSession& s, RankResults& out) override {
    const Count b = reference_micro_batch(s, out);
    const auto dtype = s.comm->timing_dtype(s.workload.dtype());  // bf16 on Gloo: fp16, same bytes
    const auto esize = static_cast<Bytes>(c10::elementSize(dtype));
    std::vector<torch::Tensor> buffers;
    for (Bytes bytes : s.plan.buckets)
      buffers.push_back(torch::zeros({std::max<std::int64_t>(1, static_cast<std::int64_t>(bytes / esize))},
                                     torch::TensorOptions().dtype(dtype).device(s.comm->device())));
    auto forward_loss = [&](int it) { return mean_loss(s, s.plan.seed + 1, first_sample(s, it, b), b); };
    auto issue_all = [&] {
      std::vector<std::unique_ptr<comm::PendingCollective>> pending;
      for (auto& t : buffers) pending.push_back(s.comm->allreduce_sum_async(t));
      return pending;
    };

    auto bwd = s.driver.run(2, [&](engine::PhaseClock& clock, int it) {
      auto loss = forward_loss(it);
      clock.mark();
      loss.backward();
      clock.mark();
    });
    const Seconds gap = comm_gap_for(s.comm->device());
    auto comm = s.driver.run(2, [&](engine::PhaseClock& clock, int) {
      busy_for(gap);
      clock.mark();
      auto pending = issue_all();
      for (auto& w : pending) w->wait();
      clock.mark();
    });
    auto both = s.driver.run(2, [&](engine::PhaseClock& clock, int it) {
      auto loss = forward_loss(it);
      clock.mark();
      auto pending = issue_all();
      loss.backward();
      for (auto& w : pending) w->wait();
      clock.mark();
    });
    OverlapPoint p;
    p.world_size = s.world_size;
    p.micro_batch = b;
    p.backward_alone = bwd.phases[1].median;
    p.comm_alone = comm.phases[1].median;
    p.overlapped = both.phases[1].median;
    out.overlap.push_back(p);
  }

 private:
  static Count reference_micro_batch(const RankSession& s, const RankResults& out) {
    std::map<Bytes, Seconds> bucket_time;
    for (const auto& a : out.allreduce)
      if (a.tag == "bucket" && a.world_size == s.world_size) bucket_time[a.bytes] = a.time;
    Seconds comm_est = 0;
    for (Bytes bytes : s.plan.buckets) {
      auto it = bucket_time.lower_bound(bytes / 4 * 4);
      if (it != bucket_time.end()) comm_est += it->second;
    }
    Count largest = s.plan.micro_batches.back();
    for (const auto& c : out.compute) {
      if (c.concurrent_ranks != s.world_size) continue;
      if (c.backward.median >= comm_est) return c.micro_batch;
    }
    return largest;
  }
};

}  // namespace

std::unique_ptr<Probe> make_overlap_probe() { return std::make_unique<OverlapProbe>(); }

}  // namespace gaccum::profiler
