// What: `gaccum-tune cluster fit [--nccl-tests [OP:]LOG ...] [--profile P.json ...] [--base C.json]
//       [--nodes N] [--device-memory SIZE] [--name NAME] -o cluster.json`: a cluster description
//       fitted from measurements (model/cluster_fit.hpp), its per-level latency and bandwidth
//       printed with the fit's residuals, and the source of every number recorded in the file.
// Why: the tuner's many-node predictions rest on the intra- and inter-node links; this turns a
//      run the user already has (nccl-tests, or `gaccum-tune profile` under torchrun/Slurm) into
//      them instead of a hand-written estimate.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/command.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"
#include "core/profile.hpp"
#include "core/utc_time.hpp"
#include "model/cluster.hpp"
#include "model/cluster_fit.hpp"
#include "model/nccl_tests_log.hpp"

namespace gaccum::cli {
namespace {

struct ClusterFitOptions {
  std::vector<std::string> nccl_tests;  // [OP:]PATH
  std::vector<std::string> profiles;
  std::string base;
  std::string nodes;
  std::string device_memory;
  std::string name;
  std::string output;
  bool quiet_residuals = false;
};

// "all_reduce:logs/a.txt" -> (op, path); a path whose prefix is not an op stays whole.
std::pair<std::optional<model::NcclTestsOp>, std::string> split_op(const std::string& arg) {
  const auto colon = arg.find(':');
  if (colon != std::string::npos && colon > 0)
    if (auto op = model::parse_nccl_tests_op(arg.substr(0, colon))) return {op, arg.substr(colon + 1)};
  return {std::nullopt, arg};
}

std::string gbps(double bytes_per_s) {
  return bytes_per_s >= 1e29 ? "inf" : fmt::format("{:.2f} GB/s", bytes_per_s / 1e9);
}
std::string us(double s) {
  return fmt::format("{:.2f} us", s * 1e6);
}
std::string pct(double x) {
  return fmt::format("{:.1f}%", 100 * x);
}

void print_level(const char* name, const model::LinkParams& l, const model::LinkProvenance& p) {
  fmt::print("  {:<10}  {:>10}  {:>12}  {:<9}", name, us(l.latency), gbps(l.bandwidth), to_string(p.origin));
  if (p.origin == model::LinkOrigin::measured)
    fmt::print("  {:>6}  {:>7}  {:>7}  {}", p.points, pct(p.rms_rel_residual), pct(p.max_rel_residual), p.from);
  fmt::print("\n");
}

int run_cluster_fit(const ClusterFitOptions& o) {
  if (o.nccl_tests.empty() && o.profiles.empty())
    throw InputError("cluster fit: give at least one --nccl-tests LOG or --profile PROFILE.json to fit");
  if (o.output.empty()) throw InputError("-o/--output: name the cluster file to write, e.g. -o cluster.json");
  model::ClusterFitRequest req;
  for (const auto& a : o.nccl_tests) {
    const auto [op, path] = split_op(a);
    req.logs.push_back(model::load_nccl_tests_log(path, op));
  }
  for (const auto& p : o.profiles) req.profiles.emplace_back(load_profile(p), p);
  if (!o.base.empty()) {
    req.base = model::load_cluster(o.base);
    req.base_path = o.base;
  }
  if (!o.nodes.empty()) req.nodes = parse_positive_count(o.nodes, "--nodes");
  if (!o.device_memory.empty()) {
    req.device_memory = parse_bytes(o.device_memory, "--device-memory");
    if (*req.device_memory == 0) throw InputError("--device-memory: must be positive, e.g. 80GiB");
  }
  req.name = o.name;
  req.now_utc = utc_now();
  const auto fit = model::fit_cluster(req);
  const auto& c = fit.cluster;

  fmt::print("cluster '{}': {} node(s) x {} GPUs{}\n", c.name, c.nodes, c.gpus_per_node,
             c.device_name.empty() ? "" : fmt::format(" ({})", c.device_name));
  fmt::print("  {:<10}  {:>10}  {:>12}  {:<9}  {:>6}  {:>7}  {:>7}  {}\n", "level", "latency", "bandwidth", "source",
             "points", "rms", "max", "fitted from");
  print_level("intra_node", c.intra_node, c.intra_source);
  if (c.nodes > 1 || c.inter_node.bandwidth > 0) print_level("inter_node", c.inter_node, c.inter_source);
  fmt::print("  (latency per ring step, bandwidth as nccl-tests busbw; residual = (fitted - measured) / measured)\n");
  if (!o.quiet_residuals && !fit.residuals.empty()) {
    fmt::print("\nmeasured vs fitted:\n");
    fmt::print("  {:<10}  {:<14}  {:>5}  {:>5}  {:>10}  {:>11}  {:>11}  {:>8}  {}\n", "level", "op", "ranks", "nodes",
               "size", "measured", "fitted", "residual", "source");
    for (const auto& r : fit.residuals)
      fmt::print("  {:<10}  {:<14}  {:>5}  {:>5}  {:>10}  {:>11}  {:>11}  {:>8}  {}\n", r.level, r.op, r.ranks, r.nodes,
                 format_bytes(r.bytes), us(r.measured), us(r.fitted), fmt::format("{:+.1f}%", 100 * r.rel()), r.source);
  }
  for (const auto& n : fit.notes) fmt::print("note: {}\n", n);
  for (const auto& w : fit.warnings) std::cerr << fmt::format("gaccum-tune: warning: {}\n", w);
  write_file_atomic(o.output, model::to_json(c).dump(2) + "\n");
  fmt::print("wrote {}\n", o.output);
  return kExitOk;
}

}  // namespace

void add_cluster_command(CLI::App& app, Action& action) {
  auto* sub = app.add_subcommand("cluster", "Cluster descriptions: fit one from nccl-tests logs or profiles");
  sub->require_subcommand(1);
  auto o = std::make_shared<ClusterFitOptions>();
  auto* fit = sub->add_subcommand(
      "fit", "Fit a cluster description (per-level latency and bandwidth) from nccl-tests output or profiles");
  fit->add_option("--nccl-tests", o->nccl_tests,
                  "nccl-tests output (all_reduce_perf, reduce_scatter_perf, all_gather_perf) as [OP:]PATH; a log from "
                  "one node fits intra_node, one spanning nodes inter_node (repeatable)");
  fit->add_option("--profile", o->profiles,
                  "A gaccum-tune profile: its allreduce, reduce-scatter and all-gather points, per level when it ran "
                  "under a cluster launcher (repeatable)");
  fit->add_option("--base", o->base, "A cluster description whose device, prices and unmeasured levels to keep");
  fit->add_option("--nodes", o->nodes, "Nodes of the cluster to plan for (default: the base's, or as measured)");
  fit->add_option("--device-memory", o->device_memory, "Memory per GPU, e.g. 80GiB (default: the base's)");
  fit->add_option("--name", o->name, "Name of the cluster (default: fitted, or the base's name + -fitted)");
  fit->add_option("-o,--output", o->output, "The cluster file to write (JSON, examples/clusters/ format)");
  fit->add_flag("--no-residuals", o->quiet_residuals, "Do not print the per-measurement residual table");
  fit->callback([o, &action] { action = [o] { return run_cluster_fit(*o); }; });
}

}  // namespace gaccum::cli
