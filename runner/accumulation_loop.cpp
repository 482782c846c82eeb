// What/why: see accumulation_loop.hpp.
#include "runner/accumulation_loop.hpp"

#include <cmath>
#include <type_traits>

#include <fmt/format.h>

#include "core/error.hpp"
#include "engine/phase_clock.hpp"

namespace gaccum::runner {
namespace {

// The window's clock (engine/phase_clock.hpp: steady clock on CPU, CUDA events on a GPU, read
// once when the window ends): marks at the phase boundaries, and which intervals were the
// observer's. Interval i lies between mark i and mark i + 1 (mark 0 is begin()).
class WindowClock {
 public:
  explicit WindowClock(engine::PhaseClock& clock) : clock_(clock) {}
  void begin() {
    clock_.begin();
    marks_ = 0;
    observer_.clear();
  }
  int mark() {  // closes interval `marks_`
    clock_.mark();
    return marks_++;
  }
  // Runs an observer call as its own interval.
  template <class F>
  auto observed(F&& f) {
    mark();
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      observer_.push_back(mark());
    } else {
      auto r = f();
      observer_.push_back(mark());
      return r;
    }
  }
  std::vector<Seconds> intervals() { return clock_.intervals(); }
  const std::vector<int>& observer() const { return observer_; }

 private:
  engine::PhaseClock& clock_;
  int marks_ = 0;
  std::vector<int> observer_;
};

double sum(const std::vector<Seconds>& v, int first, int end) {
  double s = 0;
  for (int i = first; i < end; ++i) s += v[static_cast<std::size_t>(i)];
  return s;
}

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
  t.global_terms = c.comm ? c.comm->allreduce_sum_scalar(static_cast<double>(t.local_terms))
                         : static_cast<double>(t.local_terms);
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
  std::unique_ptr<engine::PhaseClock> own_clock = c.clock ? nullptr : engine::clock_for(c.workload.device());
  WindowClock clock(c.clock ? *c.clock : *own_clock);
  RankSteps rec;
  for (Count w = 0; w < spec.total_windows(); ++w) {
    obs.window_begin(w);
    clock.begin();

    // 1. zero the gradients.
    if (clock.observed([&] { return obs.zero_gradients(w); })) c.sync.zero_grad();
    clock.observed([&] { obs.after_zero_grad(w); });

    // 2. the window's loss terms across ranks.
    WindowTerms terms = token_workload ? token_terms(c, w) : WindowTerms{};
    if (!token_workload) terms.global_terms = static_cast<double>(spec.window_samples(w));
    if (!(terms.global_terms > 0)) throw RuntimeFailure(fmt::format("window {} has no loss terms across ranks", w));
    const double scale = static_cast<double>(spec.world_size) / terms.global_terms;

    // 3. k micro-steps: forward, loss, backward, the strategy's synchronisation.
    WindowLoss loss;
    int arrival_end = 0;  // intervals before the end of the last backward
    c.sync.begin_step(k);
    for (Count m = 0; m < k; ++m) {
      clock.observed([&] { obs.micro_begin(w, m); });
      c.sync.before_forward(m);
      auto [first, count] = spec.micro_range(w, c.rank, m);
      if (count > 0) {
        auto batch = c.workload.make_batch(c.seed, first, count);
        if (!token_workload) {
          terms.local_terms += batch.loss_terms;
          terms.local_samples += count;
        }
        MicroStep ms{w, m, first, count, batch.loss_terms, 0.0};
        ms.loss_scale = clock.observed([&] { return obs.loss_scale(ms, scale); });
        torch::Tensor scaled;  // the one 0-dim tensor alive in the backward, as in the profile's
        {
          auto loss_sum = c.workload.loss_sum(c.workload.forward(batch), batch);
          loss.add(loss_sum);
          scaled = loss_sum * ms.loss_scale;
        }
        c.sync.before_backward(m);
        scaled.backward();
        clock.observed([&] { obs.after_backward(ms); });
        batch = workloads::Batch{};  // release the micro-batch before the next one
      } else {
        c.sync.before_backward(m);  // no samples left: the collectives all the same
      }
      if (m == k - 1) arrival_end = clock.mark() + 1;
      c.sync.after_backward(m);
    }
    clock.observed([&] { obs.after_sync(w); });

    // 4. the optimizer step (the window checks, untimed, come before it: they read .grad).
    clock.mark();
    obs.check_window(w);
    const int checks = clock.mark();
    c.optimizer.step();
    const int optimizer_step = clock.mark();
    c.sync.after_optimizer_step();  // zero1/zero2: the stepped shards all-gathered
    const int after_step = clock.mark();
    obs.after_step(w);

    // This rank's figures of the window.
    const auto iv = clock.intervals();
    double observed = 0;
    for (int i : clock.observer()) observed += iv[static_cast<std::size_t>(i)];
    const auto& st = c.sync.stats();
    const double optimizer = iv[static_cast<std::size_t>(optimizer_step)];
    const double step_time = sum(iv, 0, after_step + 1) - iv[static_cast<std::size_t>(checks)] - observed;
    rec.step_time.push_back(step_time);
    rec.optimizer.push_back(optimizer);
    rec.exposed.push_back(st.exposed);
    rec.comm_total.push_back(st.comm_total);
    rec.compute.push_back(step_time - st.exposed - optimizer);
    rec.arrival.push_back(sum(iv, 0, arrival_end));
    rec.instrumentation.push_back(observed);
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
