// What: the optimizer probe: one iteration = workloads::zero_grad + optimizer.step over all
//       parameters (what ends every accumulation window), after one untimed step so the
//       optimizer state (Adam's moments) already exists.
// Contract with the cost model: OptimizerPoint{concurrent_ranks = p}.step holds the stats of the
//       per-iteration max over the p ranks stepping at the same time.
#include <torch/torch.h>

#include "profiler/probe.hpp"
#include "workloads/optimizer.hpp"

namespace gaccum::profiler {
namespace {

class OptimizerProbe final : public Probe {
 public:
  const char* name() const override { return "optimizer"; }
  bool applies(const RankSession&) const override { return true; }

  void run(RankSession& s, RankResults& out) override {
    workloads::zero_grad(s.params);
    s.optimizer.step();  // allocates the state
    auto timed = s.driver.run(1, [&](engine::PhaseClock& clock, int) {
      workloads::zero_grad(s.params);
      s.optimizer.step();
      clock.mark();
    });
    OptimizerPoint p;
    p.concurrent_ranks = s.world_size;
    p.step = timed.total;
    out.optimizer.push_back(p);
    out.local["optimizer_step"] = TimingStats::from_samples(timed.local_total).median;
  }
};

}  // namespace

std::unique_ptr<Probe> make_optimizer_probe() { return std::make_unique<OptimizerProbe>(); }

}  // namespace gaccum::profiler
