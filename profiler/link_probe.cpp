// What/why: see link_probe.hpp.
#include "profiler/link_probe.hpp"

#include <unistd.h>

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"
#include "engine/iteration_driver.hpp"
#include "profiler/probe.hpp"

namespace gaccum::profiler {
namespace {

void sweep_group(comm::Communicator& group, CommLevel level, const std::vector<Bytes>& sizes, int warmup, int iters,
                 bool collectives, LevelSweep& out) {
  engine::IterationDriver driver(&group, group.device(), warmup, iters);
  for (Bytes b : sizes) {
    AllreducePoint p = time_allreduce_c10d(group, driver, b, warmup, iters);
    p.level = level;
    out.allreduce.push_back(p);
  }
  if (collectives)
    for (const bool rs : {true, false})
      for (Bytes b : sizes) {
        CollectivePoint c = time_collective_c10d(group, driver, rs, b, warmup, iters);
        c.level = level;
        out.collectives.push_back(c);
      }
  driver.barrier();
}

// Each sub-group's points are reduced over its own ranks: reduce them once more over the world,
// so that every rank returns the same list and a level's point is its slowest group (what the
// hierarchical allreduce's phase waits for). Every group of a level ran the same sizes and
// iterations. #wrong: each group's sum (counted once, by the group's first rank), summed.
template <class Point>
void reduce_over_world(engine::IterationDriver& wd, const NodeLayout& lay, const RankContext& ctx,
                       std::vector<Point>& pts, BytesPerSecond (*busbw)(Bytes, Seconds, Count)) {
  std::vector<std::vector<double>> rows;
  for (const auto& p : pts) rows.push_back(p.samples);
  rows = wd.max_over_ranks(rows);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    auto& p = pts[i];
    p.samples = rows[i];
    p.time = TimingStats::from_samples(p.samples).mean;
    p.algbw = engine::algbw(p.bytes, p.time);
    p.busbw = busbw(p.bytes, p.time, p.world_size);
    const bool first = p.level == CommLevel::job          ? ctx.rank == 0
                       : p.level == CommLevel::intra_node ? ctx.local_rank == 0
                                                          : lay.node == 0;
    Count total = 0;
    for (double w : wd.gather(first ? double(p.wrong) : 0.0)) total += static_cast<Count>(w);
    p.wrong = total;
  }
}

}  // namespace

NodeLayout node_layout(comm::Communicator& world, const RankContext& ctx) {
  char name[256] = {0};
  ::gethostname(name, sizeof(name) - 1);
  const std::string key = ctx.node_rank >= 0 ? fmt::format("n{:08d}", ctx.node_rank) : fmt::format("h{}", name);
  const auto all =
      world.allgather_strings(fmt::format("{}\t{}\t{}\t{}", key, ctx.local_rank, ctx.local_world_size, name));
  struct Entry {
    std::string key, host;
    int local = 0, local_size = 0;
  };
  std::vector<Entry> es;
  for (const auto& line : all) {
    Entry e;
    std::istringstream in(line);
    std::getline(in, e.key, '\t');
    std::string l, ls;
    std::getline(in, l, '\t');
    std::getline(in, ls, '\t');
    std::getline(in, e.host);
    e.local = std::atoi(l.c_str());
    e.local_size = std::atoi(ls.c_str());
    es.push_back(e);
  }
  std::vector<std::string> keys;  // node keys in order: node ranks numerically, host names by first rank
  for (const auto& e : es)
    if (std::find(keys.begin(), keys.end(), e.key) == keys.end()) keys.push_back(e.key);
  if (ctx.node_rank >= 0) std::sort(keys.begin(), keys.end());
  NodeLayout lay;
  lay.nodes = static_cast<Count>(keys.size());
  std::vector<std::vector<int>> members(keys.size());
  for (int r = 0; r < static_cast<int>(es.size()); ++r) {
    const auto n = static_cast<std::size_t>(std::find(keys.begin(), keys.end(), es[static_cast<std::size_t>(r)].key) -
                                            keys.begin());
    members[n].push_back(r);
  }
  lay.ranks_per_node = static_cast<Count>(members[0].size());
  for (std::size_t n = 0; n < keys.size(); ++n) {
    auto& m = members[n];
    if (static_cast<Count>(m.size()) != lay.ranks_per_node)
      throw InputError(
          fmt::format("environment: node {} holds {} ranks and node {} holds {}: the profile's levels need "
                      "the same number of ranks on every node (--nproc-per-node)",
                      keys[0].substr(1), members[0].size(), keys[n].substr(1), m.size()));
    std::sort(m.begin(), m.end(), [&](int a, int b) { return es[std::size_t(a)].local < es[std::size_t(b)].local; });
    for (std::size_t i = 0; i < m.size(); ++i) {
      const auto& e = es[static_cast<std::size_t>(m[i])];
      if (e.local != static_cast<int>(i) || e.local_size != static_cast<int>(m.size()))
        throw InputError(
            fmt::format("environment: on node {} rank {} has LOCAL_RANK {} of LOCAL_WORLD_SIZE {}, but the "
                        "node holds {} ranks: the launcher's local ranks must be 0..{}",
                        keys[n].substr(1), m[i], e.local, e.local_size, m.size(), m.size() - 1));
    }
    lay.hosts.push_back(es[static_cast<std::size_t>(m[0])].host);
    if (std::find(m.begin(), m.end(), ctx.rank) != m.end()) {
      lay.node = static_cast<int>(n);
      lay.node_members = m;
    }
  }
  for (std::size_t n = 0; n < keys.size(); ++n)
    lay.local_peers.push_back(members[n][static_cast<std::size_t>(ctx.local_rank)]);
  lay.members = members;
  for (const auto& e : es) lay.host_of.push_back(e.host);
  // Several "nodes" on one host (a loopback test standing for a cluster): name them apart.
  const std::vector<std::string> names = lay.hosts;
  for (std::size_t n = 0; n < lay.hosts.size(); ++n)
    if (std::count(names.begin(), names.end(), names[n]) > 1) lay.hosts[n] += fmt::format(" (node {})", n);
  return lay;
}

LevelSweep sweep_levels(comm::Communicator& world, const NodeLayout& lay, const RankContext& ctx,
                        const std::vector<Bytes>& sizes, int warmup, int iters, bool job_level, bool collectives,
                        const std::string& tag) {
  LevelSweep out;
  if (job_level && world.world_size() >= 2) sweep_group(world, CommLevel::job, sizes, warmup, iters, collectives, out);
  if (lay.nodes > 1 && lay.ranks_per_node > 1) {
    auto intra = world.split(lay.node_members, fmt::format("{}-intra{}", tag, lay.node));
    sweep_group(*intra, CommLevel::intra_node, sizes, warmup, iters, collectives, out);
  }
  if (lay.nodes > 1) {
    auto inter = world.split(lay.local_peers, fmt::format("{}-inter{}", tag, ctx.local_rank));
    sweep_group(*inter, CommLevel::inter_node, sizes, warmup, iters, collectives, out);
  }
  engine::IterationDriver wd(&world, world.device(), 0, 0);
  reduce_over_world(wd, lay, ctx, out.allreduce, &engine::busbw);
  reduce_over_world(wd, lay, ctx, out.collectives, &engine::busbw_scatter_gather);
  return out;
}

}  // namespace gaccum::profiler
