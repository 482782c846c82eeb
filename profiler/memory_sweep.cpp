// What/why: see memory_sweep.hpp.
#include "profiler/memory_sweep.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "engine/cuda_support.hpp"
#include "engine/rank_error.hpp"
#include "engine/watchdog.hpp"
#include "profiler/progress.hpp"
#include "workloads/optimizer.hpp"

namespace gaccum::profiler {
namespace {

using Clock = std::chrono::steady_clock;

// A micro_batch whose predicted peak exceeds the cap by more than this factor is not run (the
// peak is affine in micro_batch; the slack covers allocator rounding on CUDA). Predictions need
// two measured points: at micro_batch 1 the b-independent part of the window (optimizer
// temporaries, data-stream state) cannot be told apart from the per-sample part.
constexpr double kPredictionSlack = 1.02;

Seconds since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The allocated high-water mark per phase of a staged model's window (core/profile.hpp
// MemoryPoint::phases): at each boundary the tracker's peak since the previous boundary is the
// closing phase's, and the peak restarts at the current level. It allocates no tensor (the
// gradient hooks live outside the tracked allocator), so the window's bytes are unchanged.
class PhaseRecorder final : public workloads::StagedModel::UnitHooks {
 public:
  PhaseRecorder(engine::DeviceMemory& mem, Count units) : mem_(mem), n_(units), peaks_(phase_count(units), 0) {}
  void before_unit_forward(Count u) override { enter(forward_phase(u)); }
  void after_unit_forward(Count u, const torch::Tensor& out) override {
    enter(after_forward_phase(u));
    if (out.requires_grad()) out.register_hook([this, u](const torch::Tensor&) { enter(backward_phase(u, n_)); });
  }
  void enter(std::size_t phase) {
    close();
    current_ = phase;
  }
  void close() {
    const auto snap = mem_.snapshot();
    peaks_[current_] = std::max(peaks_[current_], snap.peak_allocated);
    overall_ = std::max(overall_, snap.peak_allocated);
    overall_reserved_ = std::max(overall_reserved_, snap.peak_reserved);
    mem_.reset_peak();
  }
  Bytes overall() const { return overall_; }
  Bytes overall_reserved() const { return overall_reserved_; }
  // Each phase's peak above `floor` (allocated before the workload + its static bytes), 0 below.
  std::vector<Bytes> phases(Bytes floor) const {
    std::vector<Bytes> out;
    for (Bytes p : peaks_) out.push_back(p > floor ? p - floor : 0);
    return out;
  }

 private:
  engine::DeviceMemory& mem_;
  Count n_;
  std::vector<Bytes> peaks_;
  std::size_t current_ = kOutsidePhase;
  Bytes overall_ = 0, overall_reserved_ = 0;
};

}  // namespace

std::string does_not_fit_message(const std::string& workload, Count micro_batch, Bytes needs, Bytes cap,
                                 const std::string& what) {
  return fmt::format("--memory-cap: {} does not fit even at micro_batch {}: needs {} ({} bytes{}), cap {} ({} bytes); "
                     "raise --memory-cap or --device-memory, or profile a smaller workload",
                     workload, micro_batch, format_bytes(needs), needs, what.empty() ? "" : ", " + what,
                     format_bytes(cap), cap);
}

MemorySweep::MemorySweep(const workloads::WorkloadConfig& cfg, Optimizer optimizer, double lr)
    : MemorySweep(cfg, optimizer, lr, engine::memory_for(torch::Device(cfg.device))) {}

MemorySweep::MemorySweep(const workloads::WorkloadConfig& cfg, Optimizer optimizer, double lr,
                         std::unique_ptr<engine::DeviceMemory> memory)
    : mem_(std::move(memory)) {
  const torch::Device device(cfg.device);
  comm::sync_device(device);
  base_ = mem_->snapshot().allocated;
  workload_ = workloads::make_workload(cfg);
  comm::sync_device(device);
  static_.weights = mem_->snapshot().allocated - base_;
  params_ = workload_->parameters();
  Bytes before = mem_->snapshot().allocated;
  workloads::zero_grad(params_);
  comm::sync_device(device);
  static_.gradients = mem_->snapshot().allocated - before;
  // Mixed precision allocates its fp32 masters here, before the first step: both are optimizer state.
  before = mem_->snapshot().allocated;
  optimizer_ = workloads::make_optimizer(params_, optimizer, lr);
  optimizer_->step();
  comm::sync_device(device);
  static_.optimizer_state = mem_->snapshot().allocated - before;
  static_.peak = static_.weights + static_.gradients + static_.optimizer_state;
  transient_ = measure_optimizer_transient(optimizer, lr, device);
}

// A step's temporaries above the state it keeps, on one scratch tensor of E and of 2E elements
// (core/profile.hpp OptimizerTransient): the first step allocates the state, the second is
// measured from its own level. Scratch tensors only: the model's parameters are not touched.
OptimizerTransient MemorySweep::measure_optimizer_transient(Optimizer optimizer, double lr, const torch::Device& device) {
  constexpr Count kElements = 1 << 14;
  OptimizerTransient t;
  t.elements = kElements;
  for (const Count n : {kElements, 2 * kElements}) {
    Bytes bytes = 0;
    {
      auto scratch = torch::zeros({n}, torch::TensorOptions(workload_->dtype()).device(device)).requires_grad_(true);
      scratch.mutable_grad() = torch::zeros_like(scratch);
      auto opt = workloads::make_optimizer({scratch}, optimizer, lr);
      opt->step();
      comm::sync_device(device);
      mem_->release_cache();
      mem_->reset_peak();
      const Bytes level = mem_->snapshot().allocated;
      opt->step();
      comm::sync_device(device);
      bytes = mem_->snapshot().peak_allocated - level;
    }
    (n == kElements ? t.at_e : t.at_2e) = bytes;
  }
  mem_->release_cache();
  return t;
}

MemorySweep::~MemorySweep() = default;

std::optional<MemoryPoint> MemorySweep::measure(Count b, std::uint64_t seed, Seconds* micro_step,
                                                Seconds* optimizer_step) {
  const auto device = workload_->device();
  workloads::zero_grad(params_);
  comm::sync_device(device);
  // A caching allocator (CUDA): the previous point's cached blocks go back before the peak is
  // reset, so this point's reserved peak is its own.
  mem_->release_cache();
  mem_->reset_peak();
  engine::RankPosition::set_phase(fmt::format("the memory sweep at micro_batch {}", b));
  workloads::StagedModel* staged = workload_->staged();
  std::optional<PhaseRecorder> phases;
  if (staged) phases.emplace(*mem_, staged->units());
  workloads::ScopedUnitHooks installed(staged, phases ? &*phases : nullptr);
  try {
    for (int m = 0; m < 2; ++m) {
      engine::Watchdog::beat_active();
      const auto t0 = Clock::now();
      auto batch = workload_->make_batch(seed, static_cast<Count>(m) * b, b);
      // The output is a temporary, as in the runner's micro-step: its memory is released by
      // backward, not held across it.
      auto loss = workload_->loss_sum(workload_->forward(batch), batch) /
                  static_cast<double>(std::max<Count>(1, batch.loss_terms));
      loss.backward();
      if (phases) phases->enter(kOutsidePhase);
      comm::sync_device(device);
      if (m == 1 && micro_step) *micro_step = since(t0);
      workloads::require_finite(*workload_, loss.item<double>(), "loss", b);
    }
    const auto t0 = Clock::now();
    optimizer_->step();
    workloads::zero_grad(params_);
    comm::sync_device(device);
    if (optimizer_step) *optimizer_step = since(t0);
  } catch (const ModelError&) {
    workloads::zero_grad(params_);
    throw;
  } catch (const std::exception& e) {
    if (!engine::is_out_of_memory(e)) throw;
    workloads::zero_grad(params_);
    mem_->release_cache();
    return std::nullopt;
  }
  if (phases) phases->close();
  const auto snap = mem_->snapshot();
  MemoryPoint p;
  p.micro_batch = b;
  p.weights = static_.weights;
  p.gradients = static_.gradients;
  p.optimizer_state = static_.optimizer_state;
  p.peak = (phases ? phases->overall() : snap.peak_allocated) - base_;
  const Bytes fixed = p.weights + p.gradients + p.optimizer_state;
  p.activations = p.peak > fixed ? p.peak - fixed : 0;
  if (phases) p.phases = phases->phases(base_ + fixed);
  p.reserved_peak = mem_->caches() ? (phases ? phases->overall_reserved() : snap.peak_reserved) : 0;
  return p;
}

namespace {

// One sweep's measurements: each size tried is recorded (point, out of memory, or the model's
// error), and the verdicts the sweep stops on.
struct SweepRecorder {
  MemorySweep& sweep;
  const MemorySweepOptions& o;
  MemorySweepResult& r;
  Progress* progress;
  const std::string& name;
  std::optional<ModelError> last_error;

  // One measured size: its point, nullopt on out-of-memory, or `raised` when the model raised.
  struct Outcome {
    std::optional<MemoryPoint> point;
    bool raised = false;
  };
  Outcome record(Count b) {
    if (progress) progress->status(fmt::format("memory: micro_batch {}", b));
    Seconds t_step = 0, t_opt = 0;
    Outcome out;
    try {
      out.point = sweep.measure(b, o.seed, &t_step, &t_opt);
    } catch (const ModelError& e) {
      r.failed.push_back({b, e.model_message()});
      last_error = e;
      out.raised = true;
      return out;
    }
    if (out.point) {
      r.points.push_back(*out.point);
      r.micro_step_times.emplace_back(b, t_step);
      r.optimizer_step_time = t_opt;
      if (r.min_ran == 0 || b < r.min_ran) r.min_ran = b;
    }
    return out;
  }
  // Allocated and, on CUDA, reserved bytes (the caching allocator's segments: fragmentation a
  // real job pays too) both within the cap; reserved_peak is 0 on CPU.
  bool fits(const Outcome& p) const { return p.point && p.point->peak <= o.cap && p.point->reserved_peak <= o.cap; }
  // The model raised at every size tried: its own error, naming the sizes.
  ModelError model_failed_everywhere() const {
    std::vector<Count> sizes;
    for (const auto& f : r.failed) sizes.push_back(f.micro_batch);
    return ModelError(fmt::format("{} (it raised at every micro_batch tried: {}); check --input-shape / --input and "
                                  "--target against the model's forward()",
                                  last_error->what(), fmt::join(sizes, ", ")),
                      last_error->micro_batch(), last_error->model_message());
  }
  [[noreturn]] void first_failure(Count b, const Outcome& out) const {
    if (!out.point)
      throw OutOfMemoryError(fmt::format("--memory-cap: {} does not fit even at micro_batch {}: the device ran out of "
                                        "memory; profile a smaller workload or use a larger device",
                                        name, b));
    if (out.point->peak <= o.cap)  // allocated fits; the caching allocator's segments do not
      throw InfeasibleError(does_not_fit_message(
          name, b, out.point->reserved_peak, o.cap,
          fmt::format("reserved by the caching allocator; allocated {}", format_bytes(out.point->peak))));
    throw InfeasibleError(does_not_fit_message(name, b, out.point->peak, o.cap, ""));
  }
};

void sort_by_micro_batch(MemorySweepResult& r) {
  std::sort(r.points.begin(), r.points.end(), [](auto& a, auto& c) { return a.micro_batch < c.micro_batch; });
  std::sort(r.failed.begin(), r.failed.end(), [](auto& a, auto& c) { return a.micro_batch < c.micro_batch; });
}

// --micro-batches: the listed sizes in order, until one does not fit or raises.
void run_listed(SweepRecorder& rec) {
  auto& r = rec.r;
  r.stop = SweepStop::explicit_list;
  for (Count b : rec.o.micro_batches) {
    auto p = rec.record(b);
    if (p.raised) {
      if (r.max_fitting == 0) continue;  // below the first size that runs: try the next one
      r.notes.push_back(fmt::format("--micro-batches: the model raised at {}; not measured further", b));
      break;
    }
    if (!rec.fits(p)) {
      if (r.max_fitting == 0) rec.first_failure(b, p);
      r.notes.push_back(fmt::format("--micro-batches: {} and larger do not fit the cap ({}); not measured further", b,
                                    p.point ? "memory cap" : "out of memory"));
      break;
    }
    r.max_fitting = b;
  }
  if (r.max_fitting == 0 && rec.last_error) throw rec.model_failed_everywhere();
  r.notes.push_back("--micro-batches given: max_micro_batch_fitting is the largest listed size that fits, "
                    "not a bisected bound");
}

// Doubling from 1 until a size does not fit, is predicted not to fit, raises, or a limit ends it.
// Returns {largest fitting, smallest known not to fit (0: none)}.
std::pair<Count, Count> run_doubling(SweepRecorder& rec, Clock::time_point t_start) {
  auto& r = rec.r;
  const auto& o = rec.o;
  const Count limit = std::max<Count>(1, o.max_micro_batch);
  Count lo = 0, b = 1;
  while (true) {
    if (r.points.size() >= 2 && predict_peak(r.points, b) > kPredictionSlack * static_cast<double>(o.cap)) {
      r.stop = SweepStop::memory_cap;  // predicted not to fit: not run
      return {lo, b};
    }
    auto p = rec.record(b);
    if (p.raised) {
      if (lo == 0) {
        // Below the first size that runs (BatchNorm at micro_batch 1): the next size, three at most.
        if (r.failed.size() >= 3 || b >= limit) throw rec.model_failed_everywhere();
        b = std::min(2 * b, limit);
        continue;
      }
      r.stop = SweepStop::model_error;
      return {lo, b};
    }
    if (!rec.fits(p)) {
      if (lo == 0) rec.first_failure(b, p);
      r.stop = p.point ? SweepStop::memory_cap : SweepStop::out_of_memory;
      return {lo, b};
    }
    lo = b;
    if (b >= limit) {
      r.stop = SweepStop::max_micro_batch;
      return {lo, 0};
    }
    if (o.time_budget > 0 && since(t_start) > o.time_budget && r.points.size() >= 2) {
      r.stop = SweepStop::time_budget;
      return {lo, 0};
    }
    b = std::min(2 * b, limit);
  }
}

// Bisection between the largest fitting and the smallest non-fitting micro_batch; returns the
// largest fitting.
Count bisect(SweepRecorder& rec, Count lo, Count hi) {
  auto& r = rec.r;
  for (int guard = 0; hi > 0 && guard < 24; ++guard) {
    const Count c = next_bisect_candidate(lo, hi, predicted_largest_fitting(r.points, rec.o.cap, hi - 1));
    if (c == 0) break;
    auto p = rec.record(c);
    if (rec.fits(p)) {
      lo = c;
    } else {
      hi = c;
      if (p.raised)
        r.stop = SweepStop::model_error;
      else if (!p.point)
        r.stop = SweepStop::out_of_memory;
    }
  }
  return lo;
}

}  // namespace

MemorySweepResult MemorySweep::run(const MemorySweepOptions& o, Progress* progress) {
  MemorySweepResult r;
  const auto t_start = Clock::now();
  const std::string& name = workload_->identity().name;
  if (static_.peak > o.cap)
    throw InfeasibleError(does_not_fit_message(name, 1, static_.peak, o.cap,
                                               "weights + gradients + optimizer state alone"));
  SweepRecorder rec{*this, o, r, progress, name, std::nullopt};
  if (!o.micro_batches.empty()) {
    run_listed(rec);
    std::sort(r.points.begin(), r.points.end(), [](auto& a, auto& c) { return a.micro_batch < c.micro_batch; });
    return r;
  }
  auto [lo, hi] = run_doubling(rec, t_start);
  // The time budget ended the doubling below the cap: take the predicted boundary as the upper
  // end (its neighbour above is measured, so a correct prediction is confirmed at both sides).
  const Count limit = std::max<Count>(1, o.max_micro_batch);
  if (hi == 0 && r.stop == SweepStop::time_budget && r.points.size() >= 2) {
    const Count predicted = predicted_largest_fitting(r.points, o.cap, limit);
    if (predicted > lo) {
      hi = std::min(limit, predicted + 1) + 1;
      r.notes.push_back(fmt::format("the time budget ended the doubling at micro_batch {}: the largest fitting size "
                                    "was searched up to the predicted boundary {}",
                                    lo, predicted));
    }
  }
  r.max_fitting = bisect(rec, lo, hi);
  sort_by_micro_batch(r);
  return r;
}

double MemorySweep::predicted_peak_at(Count micro_batch, std::uint64_t seed) {
  std::vector<MemoryPoint> pts;
  std::optional<ModelError> last;
  std::vector<Count> raised;
  for (Count b : {Count(2), Count(4), Count(8)}) {
    try {
      if (auto p = measure(b, seed)) pts.push_back(*p);
    } catch (const ModelError& e) {
      last = e;
      raised.push_back(b);
    }
    if (pts.size() == 2) break;
  }
  if (pts.empty() && last)
    throw ModelError(fmt::format("{} (it raised at micro_batch {}); check --input-shape / --input and --target "
                                 "against the model's forward()",
                                 last->what(), fmt::join(raised, ", ")),
                     last->micro_batch(), last->model_message());
  if (pts.empty()) return static_cast<double>(static_.peak);  // out of memory already: the sweep says so
  return predict_peak(pts, micro_batch);
}

}  // namespace gaccum::profiler
