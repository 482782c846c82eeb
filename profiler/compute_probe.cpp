// What: the compute probe. One iteration = one steady-state micro-step of an accumulation
//       window, exactly what the runner executes k times per optimizer step:
//         phase 0  make_batch(seed, first, b)         (synthetic data, on the device)
//         phase 1  forward + loss_sum / loss_terms    ("forward")
//         phase 2  backward into allocated gradients  ("backward")
//       micro_step = the three phases together. Gradients are allocated once before
//       (workloads::zero_grad) and accumulate across iterations, as within a window.
// How: all micro_batch sizes in one interleaved adaptive run (engine::AdaptivePolicy): rounds
//       visit every size, so a disturbance or drift of the machine spreads over the whole sweep
//       instead of moving a contiguous stretch of it; a size takes repetitions until its median's
//       95% interval is within +-ci_target or the group's compute budget ends.
// Contract with the cost model: ComputePoint{micro_batch, concurrent_ranks = p} holds the
//       TimingStats of the per-iteration max over the p ranks, all p ranks computing the same
//       thing at the same time (barrier-aligned per iteration), because on CPU concurrent ranks
//       share cores and memory bandwidth. Each rank and iteration reads distinct samples.
#include <torch/torch.h>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

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
    const auto& sizes = s.plan.micro_batches;
    const auto policy = s.plan.timing(s.plan.compute_budget);
    const auto timed = s.driver.run_interleaved(
        static_cast<int>(sizes.size()), 3, policy, [&](int point, engine::PhaseClock& clock, int it) {
          const Count b = sizes[point];
          auto batch = s.workload.make_batch(s.plan.seed, first_sample(s, it, b), b);
          clock.mark();
          auto loss = s.workload.loss_sum(s.workload.forward(batch), batch) /
                      static_cast<double>(std::max<Count>(1, batch.loss_terms));
          clock.mark();
          loss.backward();
          clock.mark();
        });
    nlohmann::json local = nlohmann::json::array();
    std::vector<std::pair<double, std::string>> wide;  // (half-width, text) of the unconverged sizes
    for (size_t i = 0; i < sizes.size(); ++i) {
      const auto& t = timed.points[i];
      ComputePoint p;
      p.micro_batch = sizes[i];
      p.concurrent_ranks = s.world_size;
      p.forward = t.phases[1];
      p.backward = t.phases[2];
      p.micro_step = t.total;
      out.compute.push_back(p);
      local.push_back({{"micro_batch", sizes[i]}, {"micro_step", TimingStats::from_samples(t.local_total).median}});
      if (!timed.converged[i])
        wide.push_back({t.total.ci_half_width(), fmt::format("{} +-{:.1f}% ({} samples)", sizes[i],
                                                             100 * t.total.ci_half_width(), t.total.samples.size())});
    }
    if (!wide.empty()) {
      std::sort(wide.begin(), wide.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
      std::vector<std::string> widest;
      for (size_t i = 0; i < std::min<size_t>(4, wide.size()); ++i) widest.push_back(wide[i].second);
      out.notes.push_back(fmt::format("world_size {}: the compute rounds ended ({}) after {} rounds in {:.1f} s with {} "
                                      "of {} micro_batch sizes short of +-{:.1f}%; widest: {}",
                                      s.world_size, timed.budget_exhausted ? "time budget" : "--max-iters",
                                      timed.rounds, timed.wall, wide.size(), sizes.size(), 100 * s.plan.ci_target,
                                      fmt::join(widest, ", ")));
    }
    out.local["compute"] = local;
  }
};

}  // namespace

std::unique_ptr<Probe> make_compute_probe() { return std::make_unique<ComputeProbe>(); }

}  // namespace gaccum::profiler
