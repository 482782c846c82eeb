// What: the compute probe. One iteration = one steady-state micro-step of an accumulation
//       window, exactly what the runner executes k times per optimizer step:
//         phase 0  make_batch(seed, first, b)         (synthetic data, on the device)
//         phase 1  forward + loss_sum / loss_terms    ("forward")
//         phase 2  backward into allocated gradients  ("backward")
//       micro_step = the three phases together. Gradients are allocated once before
//       (workloads::zero_grad) and accumulate across iterations, as within a window.
// Contract with the cost model: ComputePoint{micro_batch, concurrent_ranks = p} holds the
//       TimingStats of the per-iteration max over the p ranks, all p ranks computing the same
//       thing at the same time (barrier-aligned per iteration), because on CPU concurrent ranks
//       share cores and memory bandwidth. Each rank and iteration reads distinct samples.
#include <torch/torch.h>

#include <algorithm>

#include "profiler/probe.hpp"
#include "workloads/optimizer.hpp"

namespace gaccum::profiler {
namespace {

class ComputeProbe final : public Probe {
 public:
  const char* name() const override { return "compute"; }
  bool applies(const RankSession&) const override { return true; }

  void run(RankSession& s, RankResults& out) override {
    workloads::zero_grad(s.params);
    nlohmann::json local = nlohmann::json::array();
    for (Count b : s.plan.micro_batches) {
      auto timed = s.driver.run(3, [&](engine::PhaseClock& clock, int it) {
        const Count first = (static_cast<Count>(it) * s.world_size + s.rank) * b;
        auto batch = s.workload.make_batch(s.plan.seed, first, b);
        clock.mark();
        auto loss = s.workload.loss_sum(s.workload.forward(batch), batch) /
                    static_cast<double>(std::max<Count>(1, batch.loss_terms));
        clock.mark();
        loss.backward();
        clock.mark();
      });
      ComputePoint p;
      p.micro_batch = b;
      p.concurrent_ranks = s.world_size;
      p.forward = timed.phases[1];
      p.backward = timed.phases[2];
      p.micro_step = timed.total;
      out.compute.push_back(p);
      local.push_back({{"micro_batch", b}, {"micro_step", TimingStats::from_samples(timed.local_total).median}});
    }
    out.local["compute"] = local;
  }
};

}  // namespace

std::unique_ptr<Probe> make_compute_probe() { return std::make_unique<ComputeProbe>(); }

}  // namespace gaccum::profiler
