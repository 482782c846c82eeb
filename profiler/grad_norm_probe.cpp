// What/why: see grad_norm_probe.hpp.
#include "profiler/grad_norm_probe.hpp"

#include <torch/torch.h>

#include <algorithm>

#include <fmt/format.h>

#include "engine/rank_error.hpp"
#include "engine/watchdog.hpp"

#include "workloads/optimizer.hpp"

namespace gaccum::profiler {

std::vector<Count> default_grad_norm_sizes(Count max_fitting, Count min_b) {
  min_b = std::max<Count>(1, min_b);
  if (max_fitting < 2 || max_fitting <= min_b) return {min_b};
  Count big = 1;
  while (big * 2 <= std::min<Count>(32, max_fitting)) big *= 2;
  if (big <= min_b) return {min_b};
  return {std::max<Count>(min_b, big / 8), big};
}

std::vector<GradNormPoint> measure_grad_norms(workloads::Workload& w, const std::vector<Count>& sizes, int batches,
                                              std::uint64_t seed) {
  auto params = w.parameters();
  std::vector<GradNormPoint> out;
  Count first = 0;  // disjoint samples across every micro-batch of every size
  for (Count b : sizes) {
    GradNormPoint g;
    g.micro_batch = b;
    engine::RankPosition::set_phase(fmt::format("the gradient norms at micro_batch {}", b));
    for (int j = 0; j < batches; ++j) {
      engine::Watchdog::beat_active();
      workloads::zero_grad(params);
      auto batch = w.make_batch(seed, first, b);
      first += b;
      auto loss = w.loss_sum(w.forward(batch), batch) / static_cast<double>(std::max<Count>(1, batch.loss_terms));
      loss.backward();
      torch::NoGradGuard no_grad;
      double sq = 0;
      for (const auto& p : params)
        if (p.grad().defined()) sq += p.grad().to(torch::kFloat64).pow(2).sum().item<double>();
      workloads::require_finite(w, sq, "squared gradient norm", b);
      g.sq_norms.push_back(sq);
    }
    out.push_back(g);
  }
  workloads::zero_grad(params);
  return out;
}

}  // namespace gaccum::profiler
