// What: the optimizer probe: one iteration = optimizer.step + workloads::zero_grad over all
//       parameters (what ends every accumulation window), after one untimed step so the
//       optimizer state (Adam's moments) already exists. The step runs on real gradients, as
//       in a run: the compute probe's accumulated gradients are kept and copied back before
//       each step (an untimed phase), so Adam never decays its moments on zeros. Adaptive like the compute probe
//       (engine::AdaptivePolicy, one point): the step is short, and one bimodal stretch of a few
//       iterations moved a 5-sample median by 50% (issue 16), so it takes repetitions until its
//       median's 95% interval is within +-ci_target or its budget ends.
// Contract with the cost model: OptimizerPoint{concurrent_ranks = p}.step holds the stats of the
//       per-iteration max over the p ranks stepping at the same time.
#include <torch/torch.h>

#include <fmt/format.h>

#include "profiler/probe.hpp"
#include "workloads/optimizer.hpp"

namespace gaccum::profiler {
namespace {

class OptimizerProbe final : public Probe {
 public:
  const char* name() const override { return "optimizer"; }
  bool applies(const RankSession&) const override { return true; }

  void run(RankSession& s, RankResults& out) override {
    std::vector<torch::Tensor> saved;  // the compute probe's gradients (real values)
    for (auto& p : s.params) saved.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
    s.optimizer.step();  // allocates the state
    auto policy = s.plan.timing(s.plan.optimizer_budget);
    policy.chunk = 4;
    const auto timed = s.driver.run_interleaved(1, 2, policy, [&](int, engine::PhaseClock& clock, int) {
      {
        torch::NoGradGuard no_grad;
        for (size_t i = 0; i < s.params.size(); ++i)
          if (saved[i].defined()) s.params[i].mutable_grad().copy_(saved[i]);
      }
      clock.mark();  // phase 0: restoring the gradients (not part of the step)
      s.optimizer.step();
      workloads::zero_grad(s.params);
      clock.mark();
    });
    const auto& t = timed.points[0];
    OptimizerPoint p;
    p.concurrent_ranks = s.world_size;
    p.step = t.phases[1];
    out.optimizer.push_back(p);
    out.local["optimizer_step"] = TimingStats::from_samples(t.local_total).median;
    if (!timed.converged[0])
      out.notes.push_back(fmt::format("world_size {}: optimizer step +-{:.1f}% after {} samples (target +-{:.1f}%)",
                                      s.world_size, 100 * t.phases[1].ci_half_width(), t.phases[1].samples.size(),
                                      100 * s.plan.ci_target));
  }
};

}  // namespace

std::unique_ptr<Probe> make_optimizer_probe() { return std::make_unique<OptimizerProbe>(); }

}  // namespace gaccum::profiler
