// What/why: see cluster_fit.hpp.
#include "model/cluster_fit.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/utc_time.hpp"
#include "model/allreduce.hpp"

namespace gaccum::model {

std::string file_mtime_utc(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return format_utc(static_cast<std::int64_t>(st.st_mtime));
}

namespace {

enum class Shape { intra, inter_ring, hierarchical };

// One measured time of one collective.
struct Measurement {
  std::string source;    // for residuals
  std::string describe;  // for provenance.from
  std::string when;      // ISO UTC ("" unknown)
  NcclTestsOp op = NcclTestsOp::all_reduce;
  Shape shape = Shape::intra;
  Count n = 0, m = 1, g = 1;  // ranks; nodes, ranks per node
  Bytes bytes = 0;
  Seconds time = 0;
};

double op_steps(NcclTestsOp op, Count n) {
  return (op == NcclTestsOp::all_reduce ? 2.0 : 1.0) * double(n - 1);
}

void add_log(const NcclTestsLog& log, std::vector<Measurement>& out) {
  const Count n = log.world_size(), m = log.nodes(), g = log.ranks_per_node();
  if (n < 2) {
    // A 1-rank test moves no data between GPUs: nothing to fit.
    return;
  }
  const Shape shape = m == 1 ? Shape::intra : g == 1 ? Shape::inter_ring : Shape::hierarchical;
  const std::string where =
      m == 1 ? fmt::format("{} ranks on 1 node", n) : fmt::format("{} ranks, {} nodes x {}", n, m, g);
  for (const auto& r : log.rows) {
    Measurement x;
    x.source = fmt::format("log {}", log.path);
    x.describe = fmt::format("nccl-tests {}_perf log {} ({})", to_string(log.op), log.path, where);
    x.when = file_mtime_utc(log.path);
    x.op = log.op;
    x.shape = shape;
    x.n = n;
    x.m = m;
    x.g = g;
    x.bytes = r.size;
    x.time = r.time;
    out.push_back(x);
  }
}

// A profile's allreduce and reduce-scatter / all-gather points, at their levels.
void add_profile(const Profile& p, const std::string& path, std::vector<Measurement>& out) {
  const auto& topo = p.topology;
  auto add = [&](NcclTestsOp op, const std::string& what, CommLevel level, Count world_size, Bytes bytes, Seconds time,
                 Count wrong) {
    if (wrong > 0 || time <= 0 || world_size < 2) return;
    Measurement x;
    x.source = fmt::format("profile {}", path);
    x.when = p.created_utc;
    x.op = op;
    x.bytes = bytes;
    x.time = time;
    x.n = world_size;
    switch (level) {
      case CommLevel::intra_node:
        x.shape = Shape::intra;
        x.describe = fmt::format("profile {} ({}, {} ranks inside a node)", path, what, world_size);
        break;
      case CommLevel::inter_node:
        x.shape = Shape::inter_ring;
        x.m = world_size;
        x.describe = fmt::format(
            "profile {} ({}, one rank on each of {} nodes, every local rank's group at "
            "once)",
            path, what, world_size);
        break;
      case CommLevel::job:
        if (topo.multi_node()) {
          if (world_size != topo.nodes * topo.ranks_per_node) return;
          x.shape = topo.ranks_per_node == 1 ? Shape::inter_ring : Shape::hierarchical;
          x.m = topo.nodes;
          x.g = topo.ranks_per_node;
          x.describe = fmt::format("profile {} ({} over the job, {} nodes x {})", path, what, topo.nodes,
                                   topo.ranks_per_node);
        } else {
          x.shape = Shape::intra;
          x.describe = fmt::format("profile {} ({}, {} ranks on 1 node)", path, what, world_size);
        }
        break;
    }
    out.push_back(x);
  };
  for (const auto& a : p.allreduce)
    add(NcclTestsOp::all_reduce, fmt::format("{} allreduce", a.backend), a.level, a.world_size, a.bytes, a.time,
        a.wrong);
  for (const auto& c : p.collectives) {
    const NcclTestsOp op = c.op == "reduce_scatter" ? NcclTestsOp::reduce_scatter : NcclTestsOp::all_gather;
    add(op,
        fmt::format("{} {}{}", c.backend, c.op == "reduce_scatter" ? "reduce-scatter" : "all-gather",
                    c.method.empty() ? "" : " as " + c.method),
        c.level, c.world_size, c.bytes, c.time, c.wrong);
  }
}

std::string join_unique(const std::vector<const Measurement*>& ms) {
  std::vector<std::string> seen;
  for (const auto* x : ms)
    if (std::find(seen.begin(), seen.end(), x->describe) == seen.end()) seen.push_back(x->describe);
  return fmt::format("{}", fmt::join(seen, "; "));
}

std::string oldest(const std::vector<const Measurement*>& ms) {
  std::string out;
  for (const auto* x : ms)
    if (!x->when.empty() && (out.empty() || x->when < out)) out = x->when;  // ISO strings sort by time
  return out;
}

// A level's fit must rest on measurements that determine both unknowns, latency and bandwidth:
// at least two rows that are not multiples of each other (several message sizes, or rank
// counts); otherwise the least squares writes a latency of 0 that nothing measured: InputError
// naming the level and the fix. A determined fit whose latency comes out 0 anyway (the times do
// not grow with the bytes: noise, e.g. an oversubscribed host; or a free intercept below 0: a
// latency below what the sizes resolve) is written with a warning, and `unresolved` says so in
// the level's provenance.
LinkFit fit_level(const char* level, const std::vector<const Measurement*>& ms, const std::vector<LinkFitRow>& rows,
                  std::vector<std::string>& warnings, std::string& unresolved) {
  bool independent = false;
  for (std::size_t i = 0; i < rows.size() && !independent; ++i)
    for (std::size_t j = i + 1; j < rows.size() && !independent; ++j) {
      const double cross = rows[i].steps * rows[j].bus_bytes - rows[j].steps * rows[i].bus_bytes;
      const double scale = std::fabs(rows[i].steps * rows[j].bus_bytes) + std::fabs(rows[j].steps * rows[i].bus_bytes);
      independent = std::fabs(cross) > 1e-9 * scale;
    }
  if (!independent)
    throw InputError(fmt::format(
        "cluster fit: {}: {} measurement(s), all at one message size ({}) and rank count, cannot tell latency from "
        "bandwidth (a fit would write a latency of 0 as measured); give measurements at several sizes, e.g. nccl-tests "
        "-b 8 -e 1G -f 2, or a profile's allreduce sweep",
        level, ms.size(), format_bytes(ms.front()->bytes)));
  const LinkFit f = fit_link(rows);
  const auto by_size = [](const Measurement* a, const Measurement* b) { return a->bytes < b->bytes; };
  const Measurement* lo = *std::min_element(ms.begin(), ms.end(), by_size);
  const Measurement* hi = *std::max_element(ms.begin(), ms.end(), by_size);
  if (f.times_fall || f.latency_clamped) {
    const std::string why =
        f.times_fall ? fmt::format("the measured times do not grow with the message size ({} at {}, {} at {}: noise, "
                                   "e.g. a run disturbed by other work)",
                                   format_seconds(lo->time), format_bytes(lo->bytes), format_seconds(hi->time),
                                   format_bytes(hi->bytes))
                     : fmt::format("the fit's latency came out negative over {} measurements from {} to {} (below "
                                   "what these sizes resolve)",
                                   ms.size(), format_bytes(lo->bytes), format_bytes(hi->bytes));
    warnings.push_back(fmt::format("{} latency written as 0 us, a bound, not a measurement: {}; measure again{}", level,
                                   why, f.times_fall ? " on a quiet machine" : " with small message sizes (e.g. nccl-tests -b 8)"));
    unresolved = "; latency not resolved by these measurements (written as 0)";
  }
  return f;
}

}  // namespace

ClusterFitResult fit_cluster(const ClusterFitRequest& req) {
  std::vector<Measurement> all;
  for (const auto& log : req.logs) add_log(log, all);
  for (const auto& [p, path] : req.profiles) add_profile(p, path, all);
  ClusterFitResult out;
  Cluster& c = out.cluster;
  if (req.base) c = *req.base;
  c.name = req.name.empty() ? (req.base ? req.base->name + "-fitted" : "fitted") : req.name;
  c.created_utc = req.now_utc;
  if (all.empty())
    throw InputError(
        "cluster fit: no measurement between two or more ranks in the given files (1-rank logs and "
        "1-rank profiles measure no link); give --nccl-tests logs of 2 or more GPUs or a profile with "
        "allreduce points");

  std::vector<const Measurement*> intra, inter;
  std::set<Count> span_g;
  Count max_intra_n = 0, max_m = 1;
  for (const auto& x : all) {
    (x.shape == Shape::intra ? intra : inter).push_back(&x);
    if (x.shape == Shape::intra) max_intra_n = std::max(max_intra_n, x.n);
    if (x.shape == Shape::hierarchical) span_g.insert(x.g);
    max_m = std::max(max_m, x.m);
  }
  if (span_g.size() > 1)
    throw InputError(
        fmt::format("cluster fit: the logs spanning nodes have {} ranks per node: one cluster has one "
                    "gpus_per_node; fit each node type separately",
                    fmt::join(span_g, " and ")));

  // gpus_per_node: from a run across nodes, else a multi-node profile, else the base, else the
  // largest one-node measurement.
  Count g = 0;
  std::string g_from;
  if (!span_g.empty()) {
    g = *span_g.begin();
    g_from = "the measurement across nodes";
  }
  for (const auto& [p, path] : req.profiles)
    if (g == 0 && p.topology.multi_node()) {
      g = p.topology.ranks_per_node;
      g_from = fmt::format("profile {}", path);
    }
  if (g == 0 && req.base) {
    g = req.base->gpus_per_node;
    g_from = fmt::format("--base {}", req.base_path);
  }
  if (g == 0) {
    g = std::max<Count>(1, max_intra_n);
    g_from = "the largest one-node measurement";
  }
  if (max_intra_n > g)
    throw InputError(
        fmt::format("cluster fit: a one-node measurement has {} ranks but gpus_per_node is {} ({}); give "
                    "logs of one node type",
                    max_intra_n, g, g_from));
  c.gpus_per_node = g;
  c.nodes = req.nodes ? *req.nodes : (req.base ? std::max(req.base->nodes, max_m) : max_m);
  if (c.nodes < 1) throw InputError("--nodes: must be at least 1");

  // The intra-node link.
  if (!intra.empty()) {
    std::vector<LinkFitRow> rows;
    for (const auto* x : intra) {
      const double steps = op_steps(x->op, x->n);
      rows.push_back({steps, steps / double(x->n) * double(x->bytes), 0, x->time});
    }
    std::string unresolved;
    const LinkFit f = fit_level("intra_node", intra, rows, out.warnings, unresolved);
    c.intra_node = f.link;
    c.intra_source = {LinkOrigin::measured, join_unique(intra) + unresolved, f.points,
                      f.rms_rel_residual,   f.max_rel_residual, oldest(intra)};
    for (std::size_t i = 0; i < intra.size(); ++i)
      out.residuals.push_back({intra[i]->source, to_string(intra[i]->op), "intra_node", intra[i]->n, 1, intra[i]->bytes,
                               intra[i]->time, f.fitted[i]});
    if (max_intra_n < g)
      out.notes.push_back(
          fmt::format("intra_node fitted at up to {} ranks; the model applies it to rings of {} (the "
                      "node's GPUs)",
                      max_intra_n, g));
  } else if (req.base) {
    c.intra_node = req.base->intra_node;
    c.intra_source = req.base->intra_source;
    out.notes.push_back(fmt::format("intra_node: no one-node measurement; kept from --base {} ({})", req.base_path,
                                    to_string(c.intra_source.origin)));
  } else if (g > 1) {
    throw InputError(
        fmt::format("cluster fit: no one-node measurement for intra_node, and the run across nodes has {} "
                    "ranks per node, whose intra-node phases must be priced first; add a one-node "
                    "nccl-tests log (e.g. all_reduce_perf -g {} on one node) or --base CLUSTER.json",
                    g, g));
  }

  // The inter-node link, its hierarchical rows priced on the intra link just fitted.
  if (!inter.empty()) {
    std::vector<LinkFitRow> rows;
    for (const auto* x : inter) {
      if (x->shape == Shape::inter_ring) {
        const double steps = op_steps(x->op, x->m);
        rows.push_back({steps, steps / double(x->m) * double(x->bytes), 0, x->time});
      } else {
        const double f = x->op == NcclTestsOp::all_reduce ? 1.0 : 0.5;
        const double s = double(x->bytes);
        const double gi = double(x->g), m = double(x->m);
        const Seconds intra_part = 2 * (gi - 1) * c.intra_node.latency + 2 * (gi - 1) / gi * s / c.intra_node.bandwidth;
        rows.push_back({f * 2 * (m - 1), f * 2 * (m - 1) / m * s / gi, f * intra_part, x->time});
      }
    }
    std::string unresolved;
    const LinkFit f = fit_level("inter_node", inter, rows, out.warnings, unresolved);
    c.inter_node = f.link;
    c.inter_source = {LinkOrigin::measured, join_unique(inter) + unresolved, f.points,
                      f.rms_rel_residual,   f.max_rel_residual, oldest(inter)};
    for (std::size_t i = 0; i < inter.size(); ++i)
      out.residuals.push_back({inter[i]->source, to_string(inter[i]->op), "inter_node", inter[i]->n, inter[i]->m,
                               inter[i]->bytes, inter[i]->time, f.fitted[i]});
    if (intra.empty() && g == 1) {
      c.intra_node = c.inter_node;  // one GPU per node: the model never uses the intra link
      c.intra_source = c.inter_source;
      out.notes.push_back("one GPU per node: intra_node set to the inter-node fit (the model does not use it)");
    }
  } else if (req.base && (req.base->nodes > 1 || req.base->inter_node.bandwidth > 0)) {
    c.inter_node = req.base->inter_node;
    c.inter_source = req.base->inter_source;
    if (c.nodes > 1)
      out.notes.push_back(fmt::format("inter_node: no measurement across nodes; kept from --base {} ({})",
                                      req.base_path, to_string(c.inter_source.origin)));
  } else if (c.nodes > 1) {
    throw InputError(
        fmt::format("cluster fit: --nodes {} needs inter_node, and nothing given ran across nodes; add a "
                    "multi-node nccl-tests log or a profile run under torchrun/Slurm on 2+ nodes, or "
                    "--base CLUSTER.json",
                    c.nodes));
  } else {
    c.inter_node = {};
    c.inter_source = {};
  }

  // Device.
  std::string device_name;
  for (const auto& log : req.logs)
    if (device_name.empty()) device_name = log.device_name();
  bool cuda_profile = false;
  Bytes profile_memory = 0;
  for (const auto& [p, path] : req.profiles) {
    if (device_name.empty()) device_name = p.hardware.device_name;
    if (p.hardware.device_kind == "cuda" && profile_memory == 0) {
      cuda_profile = true;
      profile_memory = p.hardware.device_memory;
    }
  }
  if (!device_name.empty()) c.device_name = device_name;
  if (req.device_memory) {
    c.device_memory = *req.device_memory;
  } else if (!req.base) {
    if (cuda_profile && profile_memory > 0) {
      c.device_memory = profile_memory;
    } else if (!req.profiles.empty() && req.logs.empty() && req.profiles.front().first.hardware.device_memory > 0) {
      c.device_memory = req.profiles.front().first.hardware.device_memory;
      out.notes.push_back(
          fmt::format("device memory {} from the profile's CPU \"device\" (--device-memory to set "
                      "another)",
                      format_bytes(c.device_memory)));
    } else {
      throw InputError(
          "--device-memory: nccl-tests logs do not say how much memory a GPU has; give it (e.g. "
          "--device-memory 80GiB) or --base CLUSTER.json");
    }
  }
  std::vector<std::string> from;
  for (const auto& log : req.logs) from.push_back(log.path);
  for (const auto& pp : req.profiles) from.push_back(pp.second);
  c.source = fmt::format(
      "fitted by gaccum-tune cluster fit at {} from {}{}", req.now_utc, fmt::join(from, ", "),
      req.base ? fmt::format("; device{} from --base {}",
                             (intra.empty() || inter.empty()) ? " and unmeasured levels" : "", req.base_path)
               : "");
  return out;
}

namespace {

// Which links a level's price rests on, and its provenance text for a warning.
std::string level_links(const Cluster& c, CommLevel level, Count nodes) {
  auto one = [](const char* name, const LinkProvenance& p) {
    return fmt::format("{} {}{}", name, to_string(p.origin), p.measured_utc.empty() ? "" : " " + p.measured_utc);
  };
  if (level == CommLevel::intra_node || (level == CommLevel::job && nodes == 1))
    return one("intra_node", c.intra_source);
  if (level == CommLevel::inter_node) return one("inter_node", c.inter_source);
  return one("intra_node", c.intra_source) + ", " + one("inter_node", c.inter_source);
}

}  // namespace

LinkDrift compare_links(const Cluster& c, const std::string& cluster_path, const std::vector<AllreducePoint>& measured,
                        Count nodes, Count ranks_per_node, double tolerance) {
  LinkDrift out;
  out.cluster_path = cluster_path;
  out.tolerance = tolerance;
  out.nodes = nodes;
  out.ranks_per_node = ranks_per_node;
  for (CommLevel level : {CommLevel::job, CommLevel::intra_node, CommLevel::inter_node}) {
    std::vector<const AllreducePoint*> pts;
    for (const auto& a : measured)
      if (a.level == level && a.world_size >= 2) pts.push_back(&a);
    if (pts.empty()) continue;
    const Count p = pts.front()->world_size;
    const bool uses_intra = level == CommLevel::intra_node || (level == CommLevel::job && ranks_per_node > 1);
    const bool uses_inter = level == CommLevel::inter_node || (level == CommLevel::job && nodes > 1);
    const char* name = to_string(level);
    Count wrong = 0;
    for (const auto* a : pts) wrong += a->wrong;
    if (wrong > 0)
      out.warnings.push_back(fmt::format("link probe: the {} allreduce over {} ranks summed {} element(s) wrong: the "
                                         "collective itself is broken on this job (check the network and NCCL/Gloo "
                                         "settings before anything else)",
                                         name, p, wrong));
    const bool no_inter = uses_inter && !(c.inter_node.bandwidth > 0);
    if (no_inter || (uses_intra && !(c.intra_node.bandwidth > 0))) {
      out.warnings.push_back(fmt::format("link probe: {} has no {} bandwidth, so its {} allreduce over {} ranks "
                                         "cannot be compared; fit the cluster from this job (gaccum-tune cluster fit)",
                                         cluster_path, no_inter ? "inter_node" : "intra_node", name, p));
      continue;
    }
    AffineCost cost;
    if (level == CommLevel::intra_node || (level == CommLevel::job && nodes == 1)) {
      cost = ring_allreduce(p, c.intra_node);
    } else if (level == CommLevel::inter_node) {
      cost = ring_allreduce(p, c.inter_node);
    } else {
      cost = hierarchical_allreduce(p, ranks_per_node, c.intra_node, c.inter_node);
    }
    std::optional<LinkDriftPoint> worst;
    for (const auto* a : pts) {
      LinkDriftPoint d;
      d.level = level;
      d.ranks = p;
      d.bytes = a->bytes;
      d.measured = a->time;
      d.predicted = cost.at(a->bytes);
      d.ratio = d.predicted > 0 ? d.measured / d.predicted : 0;
      d.drifted = !(std::abs(d.ratio - 1) <= tolerance);
      out.points.push_back(d);
      // The worst drift on a log scale (2x slow and 2x fast are as far off); a zero ratio first.
      auto off = [](double r) { return r > 0 ? std::abs(std::log(r)) : 1e300; };
      if (d.drifted && (!worst || off(d.ratio) > off(worst->ratio))) worst = d;
    }
    if (!worst) continue;
    out.drifted_levels.push_back(name);
    out.warnings.push_back(fmt::format(
        "cluster drift: the {} allreduce over {} ranks took {} at {} where {} predicts {} ({:.2f}x, tolerance "
        "+-{:.0f}%; priced on {}): the description no longer matches this job's network; fit it again (gaccum-tune "
        "profile under the launcher, then cluster fit --profile)",
        name, p, format_seconds(worst->measured), format_bytes(worst->bytes), cluster_path,
        format_seconds(worst->predicted), worst->ratio, 100 * tolerance, level_links(c, level, nodes)));
  }
  return out;
}

}  // namespace gaccum::model
