// What: the job's communication levels, measured on the job's own ranks under a cluster launcher:
//       which node every rank is on (NodeLayout, agreed by all ranks), and the allreduce over a
//       list of message sizes at each level:
//         job         the whole world                       (world_size p)
//         intra_node  each node's ranks, every node at once (g = ranks per node; nodes > 1, g > 1)
//         inter_node  one rank per node with the same local rank, every local rank's group at
//                     once, so g rings share each node's network as the hierarchical allreduce's
//                     inter-node phase does (nodes > 1)
//       and, for the profile, reduce-scatter and all-gather at the same levels.
//       Two callers: the launched `profile` (levels for profile.json, from which `cluster fit`
//       fits the two links) and `check --distributed --probe-links` (a quick probe compared with
//       the cluster description, model/cluster_fit.hpp compare_links).
// Why: issue "measured multi-node communication": one measurement procedure, so a probe and the
//      profile a cluster was fitted from measure the same thing.
// Errors: InputError naming the environment when nodes hold different numbers of ranks or the
//         launcher's local ranks are not 0..g-1; c10d failures as the communicator raises them.
#pragma once

#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/profile.hpp"
#include "core/rank_env.hpp"

namespace gaccum::profiler {

// Which node each rank of the job is on, from every rank's (node key, local rank, host). The
// node key is the launcher's node rank (GROUP_RANK, NODE_RANK, SLURM_NODEID) when it sets one,
// else the host name. Nodes are ordered by node rank, else by their first rank.
struct NodeLayout {
  Count nodes = 1, ranks_per_node = 1;
  int node = 0;                           // this rank's node index
  std::vector<int> node_members;          // the ranks of this node, by local rank
  std::vector<int> local_peers;           // one rank per node with this rank's local rank, by node
  std::vector<std::string> hosts;         // per node ("host (node i)" when nodes share a host)
  std::vector<std::vector<int>> members;  // per node, its ranks by local rank
  std::vector<std::string> host_of;       // per rank, its host name
};

// Every rank of `world` calls it (one allgather through the store).
NodeLayout node_layout(comm::Communicator& world, const RankContext& ctx);

// The allreduce (and with `collectives` the reduce-scatter and all-gather) at `sizes` over the
// levels of the layout (the header's table), every point tagged "sweep" and with its level;
// identical on every rank: a level's point is the max over all its groups, per iteration.
// `job_level`: include the whole-world level (the profile measures it with its buckets
// elsewhere). Every rank of `world` calls it with the same arguments; `tag` names the groups.
struct LevelSweep {
  std::vector<AllreducePoint> allreduce;
  std::vector<CollectivePoint> collectives;
};
LevelSweep sweep_levels(comm::Communicator& world, const NodeLayout& lay, const RankContext& ctx,
                        const std::vector<Bytes>& sizes, int warmup, int iters, bool job_level, bool collectives,
                        const std::string& tag);

}  // namespace gaccum::profiler
