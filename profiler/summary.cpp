// What/why: see summary.hpp. Bandwidth columns follow iteration_driver.hpp's definitions.
#include "profiler/summary.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "model/noise_scale.hpp"

namespace gaccum::profiler {
namespace {

std::string ms(Seconds s) { return fmt::format("{:.3f}", s * 1e3); }

}  // namespace

void print_summary(const Profile& p, std::FILE* out) {
  const auto& w = p.workload;
  const auto& h = p.hardware;
  fmt::print(out, "# gaccum-tune profile: {} ({}, {} parameters, {} {}, hash {})\n", w.name, w.kind, w.param_count,
             format_bytes(w.param_bytes), w.dtype, w.hash);
  fmt::print(out, "# device {}: {}{}, {} usable cores, {} thread(s) per rank\n", h.device_kind, h.device_name,
             h.device_kind == "cuda" ? fmt::format(" ({} SMs, driver {})", h.sm_count, h.driver) : "", h.cpu_cores,
             h.threads_per_rank);
  fmt::print(out, "# device memory {}, memory cap {}, optimizer {}\n", format_bytes(h.device_memory),
             format_bytes(p.settings.memory_cap), to_string(p.settings.optimizer));
  fmt::print(out, "# gaccum-tune {}, LibTorch {}, Gloo {}{}\n", p.versions.tool, p.versions.libtorch,
             p.versions.gloo.empty() ? "?" : p.versions.gloo,
             p.versions.cuda.empty() ? "" : fmt::format(", CUDA {}, NCCL {}", p.versions.cuda, p.versions.nccl));

  fmt::print(out, "\n# Memory per micro_batch ({}; bytes; activations = peak - weights - gradients - optimizer)\n",
             h.device_kind == "cuda" ? "CUDA caching allocator, allocated" : "exact tracking allocator");
  fmt::print(out, "# {:>11} {:>12} {:>12} {:>12} {:>12} {:>12} {:>5}\n", "micro_batch", "weights", "gradients",
             "optimizer", "activations", "peak", "fits");
  for (const auto& m : p.memory)
    fmt::print(out, "  {:>11} {:>12} {:>12} {:>12} {:>12} {:>12} {:>5}\n", m.micro_batch, m.weights, m.gradients,
               m.optimizer_state, m.activations, m.peak, m.peak <= p.settings.memory_cap ? "yes" : "no");
  fmt::print(out, "# max micro_batch fitting: {} (cap {})\n", p.max_micro_batch_fitting,
             format_bytes(p.settings.memory_cap));

  if (!p.compute.empty()) {
    if (p.settings.ci_target > 0)
      fmt::print(out, "\n# Compute per micro-step, ms: median, its 95% interval (target +-{:.1f}%) and [p10, p90] of n "
                 "iterations (at least {}, after {}+ warm-up), max over concurrent ranks\n",
                 100 * p.settings.ci_target, p.settings.iters, p.settings.warmup);
    else
      fmt::print(out, "\n# Compute per micro-step, ms: median [p10, p90] of {} iterations after {} warm-up, max over "
                 "concurrent ranks\n", p.settings.iters, p.settings.warmup);
    fmt::print(out, "# {:>11} {:>5} {:>10} {:>8} {:>5} {:>21} {:>10} {:>10} {:>12}\n", "micro_batch", "ranks",
               "micro_step", "95% ci", "n", "[p10, p90]", "forward", "backward", "samples/s");
    for (const auto& c : p.compute) {
      const auto& t = c.micro_step;
      fmt::print(out, "  {:>11} {:>5} {:>10} {:>8} {:>5} {:>21} {:>10} {:>10} {:>12.1f}\n", c.micro_batch,
                 c.concurrent_ranks, ms(t.median), fmt::format("+-{:.1f}%", 100 * t.ci_half_width()), t.samples.size(),
                 fmt::format("[{}, {}]", ms(t.p10), ms(t.p90)), ms(c.forward.median), ms(c.backward.median),
                 t.median > 0 ? static_cast<double>(c.micro_batch * c.concurrent_ranks) / t.median : 0.0);
    }
  }
  if (!p.optimizer.empty()) {
    fmt::print(out, "\n# Optimizer step (zero_grad + {} step), ms, max over concurrent ranks\n",
               to_string(p.settings.optimizer));
    fmt::print(out, "# {:>5} {:>10} {:>8} {:>5} {:>21}\n", "ranks", "median", "95% ci", "n", "[p10, p90]");
    for (const auto& o : p.optimizer)
      fmt::print(out, "  {:>5} {:>10} {:>8} {:>5} {:>21}\n", o.concurrent_ranks, ms(o.step.median),
                 fmt::format("+-{:.1f}%", 100 * o.step.ci_half_width()), o.step.samples.size(),
                 fmt::format("[{}, {}]", ms(o.step.p10), ms(o.step.p90)));
  }

  std::set<std::pair<std::string, Count>> groups;
  for (const auto& a : p.allreduce) groups.insert({a.backend, a.world_size});
  for (const auto& [backend, world] : groups) {
    fmt::print(out, "\n# Allreduce, {} world_size {}: time = mean over iterations of the max over ranks; "
               "algbw = size/time, busbw = algbw * 2(p-1)/p\n", backend, world);
    fmt::print(out, "# {:>12} {:>10} {:>6} {:>6} {:>11} {:>11} {:>11} {:>7}\n", "size(B)", "count", "type", "tag",
               "time(us)", "engine::algbw(GB/s)", "engine::busbw(GB/s)", "#wrong");
    for (const auto& a : p.allreduce) {
      if (a.backend != backend || a.world_size != world) continue;
      fmt::print(out, "  {:>12} {:>10} {:>6} {:>6} {:>11.1f} {:>11.3f} {:>11.3f} {:>7}\n", a.bytes, a.bytes / 4,
                 "float", a.tag, a.time * 1e6, a.algbw / 1e9, a.busbw / 1e9, a.wrong);
    }
  }

  std::set<std::tuple<std::string, std::string, Count>> cgroups;
  for (const auto& c : p.collectives) cgroups.insert({c.op, c.backend, c.world_size});
  for (const auto& [op, backend, world] : cgroups) {
    std::string method;
    for (const auto& c : p.collectives)
      if (c.op == op && c.backend == backend && c.world_size == world) method = c.method;
    fmt::print(out, "\n# {}, {} world_size {} ({}): size = the full message; algbw = size/time, busbw = algbw * "
               "(p-1)/p\n", op == "reduce_scatter" ? "Reduce-scatter" : "All-gather", backend, world, method);
    fmt::print(out, "# {:>12} {:>10} {:>6} {:>6} {:>11} {:>11} {:>11} {:>7}\n", "size(B)", "count", "type", "tag",
               "time(us)", "engine::algbw(GB/s)", "engine::busbw(GB/s)", "#wrong");
    for (const auto& c : p.collectives) {
      if (c.op != op || c.backend != backend || c.world_size != world) continue;
      fmt::print(out, "  {:>12} {:>10} {:>6} {:>6} {:>11.1f} {:>11.3f} {:>11.3f} {:>7}\n", c.bytes, c.bytes / 4,
                 "float", c.tag, c.time * 1e6, c.algbw / 1e9, c.busbw / 1e9, c.wrong);
    }
  }

  if (!p.grad_norms.empty()) {
    fmt::print(out, "\n# Gradient norms (squared L2 of the mean-loss gradient, independent micro-batches)\n");
    fmt::print(out, "# {:>11} {:>7} {:>14} {:>14}\n", "micro_batch", "batches", "mean |G_b|^2", "sd");
    for (const auto& g : p.grad_norms) {
      double mean = 0, var = 0;
      for (double v : g.sq_norms) mean += v;
      mean /= std::max<size_t>(1, g.sq_norms.size());
      for (double v : g.sq_norms) var += (v - mean) * (v - mean);
      var /= std::max<size_t>(1, g.sq_norms.size() - 1);
      fmt::print(out, "  {:>11} {:>7} {:>14.6g} {:>14.6g}\n", g.micro_batch, g.sq_norms.size(), mean, std::sqrt(var));
    }
    // The estimator tune and predict use (all sizes, least squares), so the numbers agree.
    std::vector<std::string> ignored;
    if (const auto e = model::estimate_noise_scale(p.grad_norms, ignored))
      fmt::print(out, "# B_simple = tr(Sigma)/|G|^2 = {:.4g} / {:.4g} = {:.1f} samples (McCandlish et al. 2018, A.1)\n",
                 e->trace_sigma, e->grad_sq_norm, e->b_simple);
    else
      fmt::print(out, "# B_simple: not estimable from these samples (|G|^2 or tr(Sigma) estimate <= 0, or one size "
                      "only)\n");
  }

  if (!p.overlap.empty()) {
    fmt::print(out, "\n# Overlap of the last backward with the bucket allreduces, ms (median of the max over ranks)\n");
    fmt::print(out, "# {:>10} {:>11} {:>14} {:>10} {:>10}\n", "world_size", "micro_batch", "backward_alone",
               "comm_alone", "overlapped");
    for (const auto& o : p.overlap)
      fmt::print(out, "  {:>10} {:>11} {:>14} {:>10} {:>10}\n", o.world_size, o.micro_batch, ms(o.backward_alone),
                 ms(o.comm_alone), ms(o.overlapped));
  }
  if (!p.conditions.empty()) {
    fmt::print(out, "\n# The machine while measuring (other processes' busy cores, hypervisor steal, load average)\n");
    for (const auto& c : p.conditions)
      fmt::print(out, "#  {:<30} {:>6.1f} s  others {:.2f} cores  steal {:.1f}%  load {:.2f} -> {:.2f}{}\n",
                 fmt::format("{}{}", c.phase, c.attempt > 1 ? " (again)" : ""), c.wall, c.others_cores, 100 * c.steal, c.load_before,
                 c.load_after, c.disturbed ? "  DISTURBED" : "");
  }
  if (!p.unconfirmed.empty()) {
    fmt::print(out, "\n# NOT CONFIRMED: these numbers were measured but could not be confirmed; predictions from them "
                    "carry the machine's noise (profile again on a quiet machine)\n");
    for (const auto& u : p.unconfirmed) fmt::print(out, "#  - {}\n", u.what);
  }
  if (!p.notes.empty()) {
    fmt::print(out, "\n# Notes\n");
    for (const auto& n : p.notes) fmt::print(out, "#  - {}\n", n);
  }
}

}  // namespace gaccum::profiler
