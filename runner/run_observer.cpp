// What/why: see run_observer.hpp.
#include "runner/run_observer.hpp"

#include "engine/rank_error.hpp"

namespace gaccum::runner {

RunObserver::RunObserver(const LoopContext& c, const Faults& faults, engine::DeviceMemory& memory,
                         engine::Watchdog& watchdog)
    : c_(c), faults_(faults), memory_(memory), watchdog_(watchdog) {}

void RunObserver::window_begin(Count w) {
  if (w == c_.spec.warmup) {
    memory_.reset_peak();
    o_.memory_at_reset = memory_.snapshot().allocated;
  }
  if (w == c_.spec.full_windows()) o_.peak_memory = memory_.snapshot().peak_allocated;  // the partial window
  engine::RankPosition::set(w, -1);
  watchdog_.beat();
  g_small_ = -1;
}

bool RunObserver::zero_gradients(Count w) {
  return !(faults_.skip_zero_grad && w > 0);
}

void RunObserver::after_zero_grad(Count) {
  o_.nonzero_at_start.push_back(nonzero_elements(c_.sync.held_gradients()));
}

void RunObserver::micro_begin(Count w, Count m) {
  engine::RankPosition::set_micro(m);
  watchdog_.beat();
  faults_.maybe_trigger(w, m);
  // The negative control: the gradient as the plan holds it before the last micro-step (a
  // collective where the plan shards its reduced gradient: every rank takes part).
  if (check_step(w) && m == c_.spec.accum_steps - 1) {
    const auto g = c_.sync.full_gradients();
    if (c_.rank == 0) before_last_ = flat_double(g, c_.params);
  }
}

double RunObserver::loss_scale(const MicroStep& ms, double correct) {
  if (!faults_.normalise_by_k) return correct;
  // The common mistake: the micro-batch's mean loss divided by accum_steps, then the sync's
  // average over ranks (runner/gradients.cpp computes the same alternative): 1 / (k * its terms).
  return 1.0 / static_cast<double>(c_.spec.accum_steps * ms.loss_terms);
}

void RunObserver::after_backward(const MicroStep& ms) {
  const bool partial = ms.window >= c_.spec.full_windows();
  if (ms.micro == 0 && !partial && ms.count == c_.spec.micro_batch && o_.nonzero_at_start.back() == 0 &&
      c_.sync.keeps_local_gradients()) {
    // |G_b|^2 of this micro-batch's mean-loss gradient: .grad holds scale * terms * G_b.
    const double f = ms.loss_scale * static_cast<double>(ms.loss_terms);
    g_small_ = comm::sq_norm(grads_of(c_.params)) / (f * f);
  }
}

void RunObserver::after_sync(Count w) {
  o_.g_small_sq.push_back(g_small_);
  o_.g_big_sq.push_back(w < c_.spec.full_windows() ? c_.sync.gradient_sq_norm() : -1.0);
}

void RunObserver::check_window(Count w) {
  if (!check_step(w)) return;
  const auto synced = c_.sync.full_gradients();
  if (w == 0) o_.grads_hash_step0 = hash_tensors(synced);
  c_.sync.gather_parameters();  // the reference pass needs the parameters (zero3)
  if (c_.rank != 0) return c_.sync.release_parameters();
  const auto got = flat_double(synced, c_.params);
  const bool token_workload = c_.workload.identity().tokens_per_sample > 0;
  const bool by_k = w == 0 && token_workload && c_.spec.accum_steps * c_.spec.world_size > 1;
  auto checks = runner::check_window(c_.workload, c_.params, c_.spec, c_.seed, w, got, before_last_, by_k,
                                     [this] { watchdog_.beat(); });
  (w == 0 ? o_.step0 : o_.partial) = std::move(checks);
  c_.sync.release_parameters();
}

void RunObserver::after_step(Count w) {
  if (faults_.perturb_param && w == 0) {
    torch::NoGradGuard ng;
    c_.sync.optimizer_parameters().front().add_(1e-3);
  }
}

Observations RunObserver::finish() {
  if (!c_.spec.runs_partial_window()) o_.peak_memory = memory_.snapshot().peak_allocated;
  engine::RankPosition::set(c_.spec.total_windows(), -1);
  watchdog_.beat();
  return std::move(o_);
}

}  // namespace gaccum::runner
