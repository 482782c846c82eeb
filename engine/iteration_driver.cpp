// What/why: see iteration_driver.hpp.
#include "engine/iteration_driver.hpp"

#include <torch/torch.h>

#include <algorithm>

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

IterationDriver::IterationDriver(comm::Communicator* comm, torch::Device device, int warmup, int iters)
    : comm_(comm), device_(device), warmup_(warmup), iters_(iters), clock_(clock_for(device)) {}

int IterationDriver::rank() const { return comm_ ? comm_->rank() : 0; }
int IterationDriver::world_size() const { return comm_ ? comm_->world_size() : 1; }

void IterationDriver::barrier() {
  if (comm_ && comm_->world_size() > 1) comm_->barrier();
}

TimedRun IterationDriver::run(int phases, const std::function<void(PhaseClock&, int)>& body) {
  return run(phases, warmup_, iters_, body);
}

TimedRun IterationDriver::run(int phases, int warmup, int iters, const std::function<void(PhaseClock&, int)>& body) {
  if (iters < 1 || warmup < 0 || phases < 1)
    throw InputError(fmt::format("--iters/--warmup: need iters >= 1 and warmup >= 0 (got {} and {})", iters, warmup));
  // local[i] = {phase 0, ..., phase n-1, total} of timed iteration i.
  std::vector<std::vector<double>> local;
  for (int it = 0; it < warmup + iters; ++it) {
    barrier();
    clock_->begin();
    body(*clock_, it);
    auto iv = clock_->intervals();
    if (static_cast<int>(iv.size()) != phases)
      throw RuntimeFailure(fmt::format("profiler: a probe marked {} phases, expected {}", iv.size(), phases));
    if (it < warmup) continue;
    double sum = 0;
    for (double v : iv) sum += v;
    iv.push_back(sum);
    local.push_back(iv);
  }
  auto reduced = max_over_ranks(local);
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
  for (const auto& row : local) out.local_total.push_back(row.back());
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
