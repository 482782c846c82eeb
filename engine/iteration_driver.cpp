// What/why: see iteration_driver.hpp.
#include "engine/iteration_driver.hpp"

#include "engine/watchdog.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum::engine {

BytesPerSecond algbw(Bytes bytes, Seconds time) { return time > 0 ? static_cast<double>(bytes) / time : 0; }

BytesPerSecond busbw(Bytes bytes, Seconds time, Count world_size) {
  if (world_size < 2) return 0;
  const double p = static_cast<double>(world_size);
  return algbw(bytes, time) * 2.0 * (p - 1.0) / p;
}

BytesPerSecond busbw_scatter_gather(Bytes bytes, Seconds time, Count world_size) {
  if (world_size < 2) return 0;
  const double p = static_cast<double>(world_size);
  return algbw(bytes, time) * (p - 1.0) / p;
}

IterationDriver::IterationDriver(comm::Communicator* comm, torch::Device device, int warmup, int iters,
                                 std::unique_ptr<PhaseClock> clock)
    : comm_(comm), device_(device), warmup_(warmup), iters_(iters), clock_(clock ? std::move(clock) : clock_for(device)) {}

int IterationDriver::rank() const { return comm_ ? comm_->rank() : 0; }
int IterationDriver::world_size() const { return comm_ ? comm_->world_size() : 1; }

void IterationDriver::barrier() {
  if (comm_ && comm_->world_size() > 1) comm_->barrier();
}

TimedRun IterationDriver::run(int phases, const std::function<void(PhaseClock&, int)>& body) {
  return run(phases, warmup_, iters_, body);
}

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TimedRun timed_from_rows(const std::vector<std::vector<double>>& reduced, const std::vector<double>& local_total,
                         int phases) {
  TimedRun out;
  for (int ph = 0; ph <= phases; ++ph) {
    std::vector<Seconds> col;
    for (const auto& row : reduced) col.push_back(row[ph]);
    if (ph < phases) {
      out.phases.push_back(TimingStats::from_samples(col));
    } else {
      out.total = TimingStats::from_samples(col);
    }
  }
  out.local_total = local_total;
  return out;
}

}  // namespace

TimedRun IterationDriver::run(int phases, int warmup, int iters, const std::function<void(PhaseClock&, int)>& body) {
  if (iters < 1 || warmup < 0 || phases < 1)
    throw InputError(fmt::format("--iters/--warmup: need iters >= 1 and warmup >= 0 (got {} and {})", iters, warmup));
  // local[i] = {phase 0, ..., phase n-1, total} of timed iteration i.
  std::vector<std::vector<double>> local;
  for (int it = 0; it < warmup + iters; ++it) {
    auto row = one_iteration(phases, [&](PhaseClock& clock) { body(clock, it); });
    if (it >= warmup) local.push_back(std::move(row));
  }
  std::vector<double> local_total;
  for (const auto& row : local) local_total.push_back(row.back());
  return timed_from_rows(max_over_ranks(local), local_total, phases);
}

std::vector<double> IterationDriver::one_iteration(int phases, const std::function<void(PhaseClock&)>& body) {
  Watchdog::beat_active();  // progress: the rank's watchdog (engine/watchdog.hpp) counts iterations
  barrier();
  clock_->begin();
  body(*clock_);
  auto iv = clock_->intervals();
  if (static_cast<int>(iv.size()) != phases)
    throw RuntimeFailure(fmt::format("profiler: a probe marked {} phases, expected {}", iv.size(), phases));
  double sum = 0;
  for (double v : iv) sum += v;
  iv.push_back(sum);
  return iv;
}

AdaptiveRun IterationDriver::run_interleaved(int points, int phases, const AdaptivePolicy& policy,
                                             const std::function<void(int, PhaseClock&, int)>& body) {
  if (policy.min_iters < 1 || policy.warmup < 0 || phases < 1 || points < 0 || policy.chunk < 1)
    throw InputError(fmt::format("--iters/--warmup: need iters >= 1 and warmup >= 0 (got {} and {})", policy.min_iters,
                                 policy.warmup));
  const bool fixed = policy.ci_target <= 0;
  const int max_iters = fixed ? policy.min_iters : std::max(policy.min_iters, policy.max_iters);
  std::vector<int> next_it(points, 0);
  // The column that decides: a phase, or the total (column `phases` of a row).
  const int judged = policy.judged_phase >= 0 && policy.judged_phase < phases ? policy.judged_phase : phases;
  // One iteration of `point`; returns this rank's phase intervals and their sum.
  auto one = [&](int point) {
    return one_iteration(phases, [&](PhaseClock& clock) { body(point, clock, next_it[point]++); });
  };
  // Warm-up, point by point: the slowest rank's time decides whether to go on.
  for (int pt = 0; pt < points; ++pt) {
    double previous = 0;
    bool improving = false;  // the last warm-up was > 5% faster than the one before it
    for (int w = 0; w < policy.warmup || (improving && w < policy.warmup + kExtraWarmup); ++w) {
      const double slowest = max_over_ranks({{one(pt)[static_cast<std::size_t>(judged)]}})[0][0];
      improving = previous > 0 && slowest < 0.95 * previous;
      previous = slowest;
    }
  }
  std::vector<std::vector<std::vector<double>>> reduced(points), local(points);
  AdaptiveRun out;
  out.converged.assign(points, fixed);
  std::vector<bool> done(points, points == 0);
  const double start = now_s();
  for (int round = 0;; ++round) {
    std::vector<int> order;
    for (int pt = 0; pt < points; ++pt)
      if (!done[pt]) order.push_back(pt);
    if (order.empty()) break;
    if (round % 2 == 1) std::reverse(order.begin(), order.end());
    std::vector<std::vector<double>> rows;
    std::vector<int> owner;
    for (int pt : order) {
      const int have = static_cast<int>(local[pt].size());
      const int take = std::min(policy.chunk, max_iters - have);
      for (int i = 0; i < take; ++i) {
        rows.push_back(one(pt));
        local[pt].push_back(rows.back());
        owner.push_back(pt);
      }
    }
    // The round's rows plus one row carrying this rank's elapsed time: one exchange per round.
    rows.push_back(std::vector<double>(phases + 1, 0.0));
    rows.back()[0] = now_s() - start;
    const auto maxed = max_over_ranks(rows);
    for (size_t r = 0; r + 1 < maxed.size(); ++r) reduced[owner[r]].push_back(maxed[r]);
    const double elapsed = maxed.back()[0];
    out.rounds = round + 1;
    out.wall = elapsed;
    const bool over_budget = policy.budget > 0 && elapsed >= policy.budget;
    for (int pt : order) {
      const int n = static_cast<int>(reduced[pt].size());
      if (n < policy.min_iters) continue;  // required samples run whatever the budget
      if (fixed || n >= max_iters) {
        done[pt] = true;
      } else {
        std::vector<Seconds> col;
        for (const auto& row : reduced[pt]) col.push_back(row[static_cast<std::size_t>(judged)]);
        if (TimingStats::from_samples(col).ci_half_width() <= policy.ci_target) {
          done[pt] = true;
          out.converged[pt] = true;
        }
      }
      if (over_budget) {
        if (!done[pt]) out.budget_exhausted = true;
        done[pt] = true;
      }
    }
  }
  for (int pt = 0; pt < points; ++pt) {
    std::vector<double> lt;
    for (const auto& row : local[pt]) lt.push_back(row.back());
    out.points.push_back(timed_from_rows(reduced[pt], lt, phases));
  }
  return out;
}

std::vector<std::vector<double>> IterationDriver::max_over_ranks(const std::vector<std::vector<double>>& local) {
  const int world = world_size();
  if (world == 1 || local.empty()) return local;
  const auto rows = static_cast<std::int64_t>(local.size());
  const auto cols = static_cast<std::int64_t>(local.front().size());
  auto all = torch::zeros({world, rows, cols}, torch::kFloat64);
  auto acc = all.accessor<double, 3>();
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) acc[rank()][r][c] = local[r][c];
  auto on_device = all.to(comm_->device());
  comm_->allreduce_sum(on_device);
  auto gathered = on_device.cpu();
  auto maxed = std::get<0>(gathered.max(0));
  auto m = maxed.accessor<double, 2>();
  std::vector<std::vector<double>> out(rows, std::vector<double>(cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) out[r][c] = m[r][c];
  return out;
}

std::vector<double> IterationDriver::gather(double mine) {
  const int world = world_size();
  if (world == 1) return {mine};
  auto all = torch::zeros({world}, torch::kFloat64);
  all[rank()] = mine;
  auto on_device = all.to(comm_->device());
  comm_->allreduce_sum(on_device);
  auto cpu = on_device.cpu();
  std::vector<double> out(world);
  for (int r = 0; r < world; ++r) out[r] = cpu[r].item<double>();
  return out;
}

}  // namespace gaccum::engine
