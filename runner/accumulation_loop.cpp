// What/why: see accumulation_loop.hpp.
#include "runner/accumulation_loop.hpp"

#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum::runner {
namespace {

using Clock = std::chrono::steady_clock;

double secs(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Times the observer's calls within one window.
struct ObserverTime {
  double total = 0;
  template <class F>
  auto operator()(F&& f) {
    const auto t = Clock::now();
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      total += secs(t, Clock::now());
    } else {
      auto r = f();
      total += secs(t, Clock::now());
      return r;
    }
  }
};

struct WindowTerms {
  Count local_terms = 0, local_samples = 0;
  double global_terms = 0;
};

// A token workload needs the window's real tokens across ranks before its first backward:
// counted without building the batches (so memory does not grow with k), then allreduced.
WindowTerms token_terms(const LoopContext& c, Count w) {
  WindowTerms t;
  for (Count m = 0; m < c.spec.accum_steps; ++m) {
    auto [first, count] = c.spec.micro_range(w, c.rank, m);
    if (count == 0) continue;
    t.local_terms += c.workload.loss_terms(c.seed, first, count);
    t.local_samples += count;
  }
  auto x = torch::full({1}, static_cast<double>(t.local_terms),
                       torch::TensorOptions().dtype(torch::kFloat64).device(c.workload.device()));
  if (c.comm) c.comm->allreduce_sum(x);
  t.global_terms = x.item<double>();
  return t;
}

// The window's loss sum (reported, not used): on CPU read at once (holding no extra bytes, so the
// tracker's peak is unchanged); on CUDA kept as detached 0-dim tensors and read after the step's
// clock stops (no device synchronisation inside the step).
struct WindowLoss {
  double sum = 0;
  std::vector<torch::Tensor> pending;
  void add(const torch::Tensor& loss_sum) {
    if (loss_sum.is_cpu())
      sum += loss_sum.item<double>();
    else
      pending.push_back(loss_sum.detach());
  }
  double total() {
    for (const auto& l : pending) sum += l.item<double>();
    pending.clear();
    return sum;
  }
};

}  // namespace

RankSteps run_windows(const LoopContext& c, LoopObserver& obs) {
  const RunSpec& spec = c.spec;
  const Count k = spec.accum_steps;
  const bool token_workload = c.workload.identity().tokens_per_sample > 0;
  RankSteps rec;
  for (Count w = 0; w < spec.total_windows(); ++w) {
    obs.window_begin(w);
    ObserverTime observed;
    const auto t0 = Clock::now();

    // 1. zero the gradients.
    if (observed([&] { return obs.zero_gradients(w); })) workloads::zero_grad(c.params);
    observed([&] { obs.after_zero_grad(w); });

    // 2. the window's loss terms across ranks.
    WindowTerms terms = token_workload ? token_terms(c, w) : WindowTerms{};
    if (!token_workload) terms.global_terms = static_cast<double>(spec.window_samples(w));
    if (!(terms.global_terms > 0)) throw RuntimeFailure(fmt::format("window {} has no loss terms across ranks", w));
    const double scale = static_cast<double>(spec.world_size) / terms.global_terms;

    // 3. k micro-steps: forward, loss, backward, the strategy's synchronisation.
    WindowLoss loss;
    Clock::time_point last_backward_end = t0;
    c.sync.begin_step(k);
    for (Count m = 0; m < k; ++m) {
      observed([&] { obs.micro_begin(w, m); });
      c.sync.before_backward(m);
      auto [first, count] = spec.micro_range(w, c.rank, m);
      if (count > 0) {
        auto batch = c.workload.make_batch(c.seed, first, count);
        if (!token_workload) {
          terms.local_terms += batch.loss_terms;
          terms.local_samples += count;
        }
        MicroStep ms{w, m, first, count, batch.loss_terms, 0.0};
        ms.loss_scale = observed([&] { return obs.loss_scale(ms, scale); });
        auto loss_sum = c.workload.loss_sum(c.workload.forward(batch), batch);
        loss.add(loss_sum);
        (loss_sum * ms.loss_scale).backward();
        observed([&] { obs.after_backward(ms); });
        batch = workloads::Batch{};  // release the micro-batch before the next one
      }
      if (m == k - 1) last_backward_end = Clock::now();
      c.sync.after_backward(m);
    }
    observed([&] { obs.after_sync(w); });

    // 4. the optimizer step (the window checks, untimed, come before it: they read .grad).
    const auto t_checks = Clock::now();
    obs.check_window(w);
    const auto t_opt = Clock::now();
    c.optimizer.step();
    const auto t_end = Clock::now();
    obs.after_step(w);

    // This rank's figures of the window.
    const auto& st = c.sync.stats();
    const double optimizer = secs(t_opt, t_end);
    const double step_time = secs(t0, t_end) - secs(t_checks, t_opt) - observed.total;
    rec.step_time.push_back(step_time);
    rec.optimizer.push_back(optimizer);
    rec.exposed.push_back(st.exposed);
    rec.comm_total.push_back(st.comm_total);
    rec.compute.push_back(step_time - st.exposed - optimizer);
    rec.arrival.push_back(secs(t0, last_backward_end));
    rec.instrumentation.push_back(observed.total);
    rec.collectives.push_back(st.collectives);
    rec.launched_in_backward.push_back(st.launched_in_backward);
    rec.collectives_per_micro.push_back(st.collectives_per_micro);
    rec.local_terms.push_back(terms.local_terms);
    rec.local_samples.push_back(terms.local_samples);
    rec.global_terms.push_back(static_cast<Count>(std::llround(terms.global_terms)));
    rec.loss_sum.push_back(loss.total());
  }
  return rec;
}

}  // namespace gaccum::runner
