// What/why: see record_checks.hpp. The measured figures, the per-window table, the environment
// and the notes of a run's record, from every rank's RankRecord (rank 0, after the last window).
#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <torch/version.h>

#include "comm/communicator.hpp"
#include "core/version.hpp"
#include "runner/record_checks.hpp"

namespace gaccum::runner {
namespace {

using nlohmann::json;

// One series of every rank, [rank][window].
template <class Member>
std::vector<std::vector<double>> per_rank(const std::vector<RankRecord>& ranks, Member m) {
  std::vector<std::vector<double>> v;
  for (const auto& r : ranks) v.push_back(r.steps.*m);
  return v;
}

// Per window: the slowest rank's step, communication, compute and optimizer; the exposed
// communication of the last rank to arrive and the others' wait for it (split_exposed); the
// arrival spread.
struct Series {
  std::vector<double> step, exposed, wait, comm, compute, opt, skew;
};

Series slowest_rank(const std::vector<RankRecord>& ranks) {
  const auto arrival = per_rank(ranks, &RankSteps::arrival);
  ExposedSplit ex = split_exposed(per_rank(ranks, &RankSteps::exposed), arrival);
  return Series{max_over_ranks(per_rank(ranks, &RankSteps::step_time)),
                std::move(ex.last_rank),
                std::move(ex.wait),
                max_over_ranks(per_rank(ranks, &RankSteps::comm_total)),
                max_over_ranks(per_rank(ranks, &RankSteps::compute)),
                max_over_ranks(per_rank(ranks, &RankSteps::optimizer)),
                spread_over_ranks(arrival)};
}

// The window's mean loss over every real sample/token across ranks (the quantity the gradient is
// taken of): the sum over ranks of their loss sums / the window's loss terms.
std::vector<double> window_losses(const std::vector<RankRecord>& ranks) {
  const auto& terms = ranks.front().steps.global_terms;
  std::vector<double> loss(terms.size(), 0.0);
  for (const auto& r : ranks)
    for (std::size_t w = 0; w < loss.size(); ++w) loss[w] += r.steps.loss_sum[w];
  for (std::size_t w = 0; w < loss.size(); ++w) loss[w] /= std::max(1.0, static_cast<double>(terms[w]));
  return loss;
}

Measured measured_figures(const RunFacts& f, const std::vector<RankRecord>& ranks, const Series& s,
                          const std::vector<double>& loss) {
  const RunSpec& spec = f.spec;
  const auto first = static_cast<std::ptrdiff_t>(spec.warmup), end = static_cast<std::ptrdiff_t>(spec.full_windows());
  auto timed = [&](const std::vector<double>& v) { return std::vector<double>(v.begin() + first, v.begin() + end); };
  auto median_of = [&](const std::vector<double>& v) { return TimingStats::from_samples(timed(v)).median; };
  const auto& r0 = ranks.front().steps;
  Measured m;
  m.step_time = TimingStats::from_samples(timed(s.step));
  m.step_time.samples.clear();
  double timed_terms = 0;
  for (auto w = first; w < end; ++w) timed_terms += static_cast<double>(r0.global_terms[static_cast<std::size_t>(w)]);
  m.throughput_samples_per_s = static_cast<double>(spec.global_batch()) / m.step_time.median;
  m.tokens_per_s = f.token_workload ? timed_terms / static_cast<double>(end - first) / m.step_time.median : 0.0;
  for (const auto& r : ranks) {
    m.peak_memory_per_rank.push_back(r.peak_memory);
    m.peak_memory = std::max(m.peak_memory, r.peak_memory);
    m.resident_memory = std::max(m.resident_memory, r.memory_at_reset);
  }
  m.comm_exposed = median_of(s.exposed);
  m.straggler_wait = median_of(s.wait);
  m.comm_total = median_of(s.comm);
  m.compute = median_of(s.compute);
  m.optimizer = median_of(s.opt);
  m.rank_skew = median_of(s.skew);
  m.collectives_per_step = r0.collectives.empty() ? 0 : r0.collectives.front();
  if (!r0.collectives_per_micro.empty()) m.collectives_per_micro_step = r0.collectives_per_micro.front();
  m.collectives_launched_in_backward =
      r0.launched_in_backward.size() > static_cast<std::size_t>(first) ? r0.launched_in_backward[first] : 0;
  m.comm_buffer_bytes = ranks.front().comm_buffer_bytes;
  m.timed_steps = end - first;
  m.loss_first_window = loss.front();
  m.loss_last_window = loss[static_cast<std::size_t>(end - 1)];
  // Noise scale from every rank's micro-step-0 norms and the window norms of the timed steps.
  std::vector<double> small_sq, big_sq;
  for (const auto& r : ranks)
    for (auto v : timed(r.steps.g_small_sq))
      if (v >= 0) small_sq.push_back(v);
  for (auto v : timed(r0.g_big_sq))
    if (v >= 0) big_sq.push_back(v);
  m.noise_scale =
      noise_scale(static_cast<double>(spec.micro_batch), small_sq, static_cast<double>(spec.global_batch()), big_sq);
  return m;
}

std::vector<WindowRow> window_table(const RunFacts& f, const std::vector<RankRecord>& ranks, const Series& s,
                                    const std::vector<double>& loss) {
  const RunSpec& spec = f.spec;
  std::vector<WindowRow> rows;
  for (Count w = 0; w < spec.total_windows(); ++w) {
    const auto i = static_cast<std::size_t>(w);
    WindowRow row;
    row.window = w;
    row.timed = w >= spec.warmup && w < spec.full_windows();
    row.partial = w >= spec.full_windows();
    row.samples = spec.window_samples(w);
    row.loss_terms = ranks.front().steps.global_terms[i];
    row.loss = loss[i];
    row.step_time = s.step[i];
    row.exposed_comm = s.exposed[i];
    row.straggler_wait = s.wait[i];
    row.rank_skew = s.skew[i];
    auto column = [&](const char* key, auto member) {
      json col = json::array();
      for (const auto& r : ranks) col.push_back((r.steps.*member)[i]);
      row.per_rank[key] = col;
    };
    column("step_time", &RankSteps::step_time);
    column("compute", &RankSteps::compute);
    column("arrival", &RankSteps::arrival);
    column("exposed", &RankSteps::exposed);
    column("comm_total", &RankSteps::comm_total);
    column("optimizer", &RankSteps::optimizer);
    column("instrumentation", &RankSteps::instrumentation);
    column("collectives", &RankSteps::collectives);
    column("launched_in_backward", &RankSteps::launched_in_backward);
    column("nonzero_at_start", &RankSteps::nonzero_at_start);
    column("local_samples", &RankSteps::local_samples);
    column("local_terms", &RankSteps::local_terms);
    rows.push_back(std::move(row));
  }
  return rows;
}

Environment environment_of(const RunFacts& f, const std::vector<RankRecord>& ranks) {
  Environment e;
  e.launcher = f.launcher;
  e.backend = f.backend;
  e.device = f.device;
  e.world_size = f.spec.world_size;
  e.threads_per_rank = f.spec.threads_per_rank;
  for (const auto& r : ranks)
    e.ranks.push_back(
        RankEnvironment{r.rank, r.local_rank, r.host, r.pid, r.threads, r.interop_threads, r.cores, r.collective_wait});
  e.tool_version = GACCUM_VERSION_STRING;
  e.libtorch_version = TORCH_VERSION;
  e.gloo_version = comm::gloo_version();
  for (auto it = f.launch.begin(); it != f.launch.end(); ++it) {
    if (it.key() == "launcher")
      e.launcher = it.value().get<std::string>();
    else
      e.launch[it.key()] = it.value();
  }
  return e;
}

// Oversubscribed hosts (timings not representative), and what accumulation changes for a model with
// batch-dependent layers (docs/DESIGN.md, "Batch-dependent layers"): said, not failed.
void warnings_and_notes(const RunFacts& f, const std::vector<RankRecord>& ranks, RunRecord& rec) {
  std::map<std::string, std::pair<int, int>> per_host;  // host -> (threads used, cores)
  for (const auto& r : ranks) {
    auto& h = per_host[r.host];
    h.first += r.threads;
    h.second = r.cores;
  }
  if (f.cpu)
    for (const auto& [host, tc] : per_host)
      if (tc.first > tc.second) {
        rec.environment->oversubscribed = true;
        rec.warnings.push_back(
            fmt::format("oversubscribed, timings not representative: {} compute threads on {} "
                        "cores of host {} (world_size x threads_per_rank > cores)",
                        tc.first, tc.second, host));
      }
  const auto& d = f.dependence;
  const Count b = f.spec.micro_batch, B = f.spec.global_batch(), k = f.spec.accum_steps;
  if (!d.batch_statistics.empty()) {
    rec.model_notes.push_back(fmt::format(
        "BatchNorm ({} layer(s): {}{}): each forward normalises over its micro_batch of {} samples, not the global "
        "batch of {}, and the running statistics are updated {} times per optimizer step (k micro-steps); "
        "SyncBatchNorm pools the statistics across ranks (not across micro-steps), GroupNorm or LayerNorm remove the "
        "dependence on the batch",
        d.batch_statistics.size(), d.batch_statistics.front(), d.batch_statistics.size() > 1 ? ", ..." : "", b, B, k));
    if (b < kSmallBatchNormMicroBatch)
      rec.warnings.push_back(
          fmt::format("micro_batch {} < {}: BatchNorm statistics from {} samples per forward are "
                      "noisy and differ from training with the global batch of {}; raise "
                      "micro_batch (fewer accum_steps) or use GroupNorm/SyncBatchNorm",
                      b, kSmallBatchNormMicroBatch, b, B));
  }
  if (!f.whole_model_gathering.empty())
    rec.model_notes.push_back(fmt::format(
        "{} gathers every parameter for each forward and backward, not one block at a time, so the peak holds the "
        "whole model (as FSDP wrapping only the root module): {}",
        traits(f.spec.sharding.sharding).name, f.whole_model_gathering));
  if (!d.dropout.empty())
    rec.model_notes.push_back(
        fmt::format("dropout ({} layer(s): {}{}): masks are drawn per micro-batch (seeded from "
                    "its position in the data stream, so the reference draws the same ones)",
                    d.dropout.size(), d.dropout.front(), d.dropout.size() > 1 ? ", ..." : ""));
}

}  // namespace

RunRecord assemble_run(const RunFacts& f, std::vector<CheckRecord> checks, const std::vector<RankRecord>& ranks) {
  RunRecord rec;
  rec.spec = f.spec;
  rec.facts = f.workload;
  const Series s = slowest_rank(ranks);
  const auto loss = window_losses(ranks);
  rec.environment = environment_of(f, ranks);
  warnings_and_notes(f, ranks, rec);
  rec.measured = measured_figures(f, ranks, s, loss);
  rec.steps = window_table(f, ranks, s, loss);
  rec.checks = std::move(checks);
  rec.ok =
      std::none_of(rec.checks.begin(), rec.checks.end(), [](const CheckRecord& c) { return c.status == Status::fail; });
  return rec;
}

}  // namespace gaccum::runner
