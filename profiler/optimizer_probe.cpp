// What: the optimizer probe: one iteration = optimizer.step + workloads::zero_grad over all
//       parameters (what ends every accumulation window), after one untimed step so the
//       optimizer state (Adam's moments) already exists. The step runs as in a run: after a
//       micro-step (forward + backward at the smallest measured micro_batch, untimed), so the
//       parameters, gradients and optimizer state come from memory as they do after a window's
//       backward instead of from the caches of the previous step (measured on the reference VM:
//       the runs' steps took 1.7-3.2x the back-to-back probe's for gpt-tiny, the LSTM and the
//       encoder at world_size 1), and on real gradients: the compute probe's accumulated
//       gradients are kept and copied back before each step (untimed), so Adam never decays
//       its moments on zeros. Adaptive like the compute probe
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
    policy.judged_phase = 1;  // the step's own interval decides, not the micro-step's before it
    const Count b = s.plan.micro_batches.empty() ? 1 : s.plan.micro_batches.front();
    const auto timed = s.driver.run_interleaved(1, 2, policy, [&](int, engine::PhaseClock& clock, int it) {
      // The micro-step a window's step follows (its gradients are replaced below).
      mean_loss(s, s.plan.seed + 2, first_sample(s, it, b), b).backward();
      {
        torch::NoGradGuard no_grad;
        for (size_t i = 0; i < s.params.size(); ++i)
          if (saved[i].defined()) s.params[i].mutable_grad().copy_(saved[i]);
      }
      clock.mark();  // phase 0: the micro-step and restoring the gradients (not part of the step)
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
