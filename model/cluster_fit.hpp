// What: a cluster description (model/cluster.hpp) fitted from measurements: nccl-tests logs
//       (model/nccl_tests_log.hpp) and gaccum-tune profiles, by least squares on relative error
//       (model/allreduce.hpp, fit_link), every level's source recorded.
//   Measurement                         level   row (t = offset + steps alpha + bus_bytes / beta)
//   one host, n ranks: allreduce        intra   2(n-1) alpha_i + 2(n-1)/n S / beta_i
//              reduce-scatter/all-gather intra   (n-1) alpha_i  + (n-1)/n S / beta_i
//   m hosts x 1 rank (or a profile's    inter   ring over m on inter (allreduce; RS/AG as above)
//     inter_node level)
//   m hosts x g ranks, g > 1            inter   the model's hierarchical allreduce (allreduce.hpp):
//                                               offset = the intra phases, 2(g-1) alpha_i +
//                                               2(g-1)/g S / beta_i, priced on the intra fit (or
//                                               --base); 2(m-1) alpha_e + 2(m-1)/m (S/g) / beta_e.
//                                               RS/AG: half of that, as the model prices them on
//                                               a cluster (ProfileModel::collective_time).
//   A profile's points count as the logs' do: allreduce and reduce-scatter / all-gather
//   (`collectives`, Gloo's all-to-all based methods move the ring's bytes per rank), at their
//   level (intra_node, inter_node, or the job: one node, or hierarchical across nodes).
//   Fitting the inter level through the model's own formula makes the cluster reproduce the
//   measured times at the logged sizes; the residuals say how far the formula is from them.
// Why: issue "measured multi-node communication": the tuner's many-node predictions rest on
//      these two links, and a hand-written inter_node latency is a guess.
// Errors: InputError naming the flag and the fix (a log spanning nodes without an intra-node
//         measurement, no device memory, gpus_per_node that disagree, a level whose
//         measurements cannot determine latency and bandwidth: one row, or one message size and
//         rank count; a 0 latency is never written as measured from such a fit). A latency the
//         measurements do not resolve (times that do not grow with the size, or a fitted
//         intercept below 0) is written as 0 with a warning, and the level's provenance says so.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/profile.hpp"
#include "model/cluster.hpp"
#include "model/nccl_tests_log.hpp"

namespace gaccum::model {

struct ClusterFitRequest {
  std::vector<NcclTestsLog> logs;
  std::vector<std::pair<Profile, std::string>> profiles;  // with their paths
  std::optional<Cluster> base;                            // --base: device, prices, and any level not measured
  std::string base_path;
  std::optional<Count> nodes;          // --nodes: the cluster to plan for (default: the base's or measured)
  std::optional<Bytes> device_memory;  // --device-memory (default: the base's, or a CUDA profile's)
  std::string name;                    // --name (default "fitted")
  std::string now_utc;                 // created_utc of the result
};

// One measurement and what the fitted cluster says of it.
struct FitResidual {
  std::string source;  // "log a.txt" / "profile p.json"
  std::string op;      // all_reduce | reduce_scatter | all_gather
  std::string level;   // intra_node | inter_node (hierarchical rows are inter_node)
  Count ranks = 0, nodes = 1;
  Bytes bytes = 0;
  Seconds measured = 0, fitted = 0;
  double rel() const { return measured > 0 ? (fitted - measured) / measured : 0; }
};

struct ClusterFitResult {
  Cluster cluster;
  std::vector<FitResidual> residuals;  // intra rows first, then inter
  std::vector<std::string> notes;
  std::vector<std::string> warnings;  // a level's latency written as a bound (0), not a measurement
};

ClusterFitResult fit_cluster(const ClusterFitRequest& req);

// The drift check (`check --distributed --probe-links`): a quick allreduce probe of the running
// job per level (profiler/link_probe.hpp) against what the cluster description prices for it,
// with the formulas the fit above uses for the same levels:
//   job         nodes == 1: ring over p on intra_node; else the hierarchical allreduce over p
//               ranks, g = ranks_per_node per node (the job's own placement, not the cluster's)
//   intra_node  ring over g on intra_node
//   inter_node  ring over the nodes on inter_node
// ratio = measured / predicted; a point drifts when |ratio - 1| > tolerance. One warning per
// level with a drifted point (its worst point), one per level the description cannot price (no
// bandwidth), one per level whose allreduce summed wrong.
struct LinkDriftPoint {
  CommLevel level = CommLevel::job;
  Count ranks = 0;
  Bytes bytes = 0;
  Seconds measured = 0, predicted = 0;
  double ratio = 0;
  bool drifted = false;
};
struct LinkDrift {
  std::string cluster_path;
  double tolerance = 0;
  Count nodes = 1, ranks_per_node = 1;
  std::vector<LinkDriftPoint> points;  // in probe order; levels the description cannot price are left out
  std::vector<std::string> drifted_levels;
  std::vector<std::string> warnings;
};
LinkDrift compare_links(const Cluster& c, const std::string& cluster_path, const std::vector<AllreducePoint>& measured,
                        Count nodes, Count ranks_per_node, double tolerance);

// The modification time of a file as ISO-8601 UTC ("" when it cannot be read): when a log was
// written, the closest a log comes to saying when it was measured.
std::string file_mtime_utc(const std::string& path);

}  // namespace gaccum::model
